// Which ioctl requests a session may let run in the kernel, untrapped (seccomp ALLOW in front of
// the traps, see ioctl_allow_bpf.h). The idea not to miss: the filter sees only the request
// number, never the fd, so a request is let through only where the supervisor would have said
// "allow" without reading anything, on every device that can receive it:
//  - the decoder's policy keys for it come from the number alone (UVM calls; frontend escapes
//    whose parameters name no class, control or GPU), so the policy's verdict is the same for
//    any parameters, and that verdict is allow;
//  - every node of its device class is granted (an fd of an ungranted node must still trap), or,
//    where the BPF LSM judge runs (ioctl_lsm.h), some node is: it refuses the request on the
//    others;
//  - no other class's trap matches the number (a UVM number that the NVIDIA frontend would run
//    as an escape of any size, a uverbs request), so no other driver gets it unpoliced.
// Unreadable parameters are the one input the supervisor would refuse (malformed) that now reaches
// the driver: its copy_from_user fails the call with EFAULT instead.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proxy/abi/nvidia_abi.h"
#include "proxy/policy/policy.h"

namespace gdrproxy::proxy {

struct KernelAllowFacts {
  // The running driver's tables; nullptr when its version is unknown (NVIDIA calls are then
  // trace-only or refused by the engine: none may skip it).
  const NvidiaDriverAbi* nvidia_abi = nullptr;
  bool nvidia_frontend_all_granted = false;  // nvidiactl and every /dev/nvidiaN
  bool nvidia_uvm_all_granted = false;       // nvidia-uvm and nvidia-uvm-tools
  bool nvidia_frontend_any_granted = false;
  bool nvidia_uvm_any_granted = false;
  // A per-device judge in the kernel (the BPF LSM, ioctl_lsm.h) refuses these requests on the
  // nodes that are not granted: a class then qualifies with some node granted, not every one.
  bool judged_per_device = false;
};

struct KernelAllowed {
  std::vector<uint32_t> requests;  // sorted, unique: what the filter lets run
  // The same requests by the device class they are allowed on (for the per-device judge).
  std::vector<uint32_t> uvm_requests, frontend_requests;
  unsigned uvm = 0, frontend = 0;  // how many of them are UVM calls and frontend escapes
  std::vector<std::string> names;  // the calls, for --stats and the docs ("UVM_FREE", "RM_FREE")
};

// The requests `policy` (an enforce-mode policy) allows unconditionally on this host.
KernelAllowed kernel_allowed_ioctls(const Policy& policy, const KernelAllowFacts& facts);

}  // namespace gdrproxy::proxy
