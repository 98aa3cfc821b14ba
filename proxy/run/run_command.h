// `gdrproxy run`: runs a command under the notify filter and serves its device calls until the
// command and all its descendants have exited. Mechanism only: what is allowed comes from the
// Policy, what a call means from the decoders, how it is shown from the trace sinks.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "proxy/observe/trap_copy.h"
#include "proxy/policy/policy.h"
#include "proxy/sandbox/ioctl_lsm.h"

namespace gdrproxy::proxy {

enum class OpenTrapChoice { kAuto, kWrite, kAll };

struct RunOptions {
  std::vector<std::string> argv;
  std::vector<std::string> grants;         // --grant; empty = policy grants, else every device
  std::optional<std::string> policy_file;  // --policy; empty = built-in default
  std::optional<Mode> mode;                // --mode; else the policy's, else enforce
  bool trace_text = false;                 // --trace: text lines on stderr
  std::optional<std::string> trace_json;   // --trace-json FILE
  OpenTrapChoice open_trap = OpenTrapChoice::kAuto;
  bool quiet = false;  // no notes on stderr (denial log lines stay)
  bool stats = false;  // print notification counts at exit
  // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP: hand the CPU straight to the caller on each answer.
  // Cheaper round trips on small machines; on large ones it pulls the caller onto the
  // supervisor's CPU, which serialises concurrent callers. nullopt = decide by CPU count.
  std::optional<bool> sync_wakeup;
  std::string dev_root = "/dev";
  // An NVIDIA driver the ABI tables do not know: run its calls trace-only instead of refusing
  // to start in enforce mode (--allow-unknown-nvidia-driver).
  bool allow_unknown_nvidia_driver = false;
  // The release whose tables judge the node's NVIDIA driver (--nvidia-abi-as).
  std::optional<std::string> nvidia_abi_as;
  bool keep_caps = false;  // --keep-caps: keep every capability in the sandbox
  // --landlock-abi N: use Landlock only up to ABI N (nullopt: all the kernel has).
  std::optional<int> landlock_abi_max;
  // --broker-pidfd-getfd: processes of the sandbox may take each other's fds with pidfd_getfd
  // (performed by gdrproxy; the sandbox lacks CAP_SYS_PTRACE for it).
  bool broker_pidfd_getfd = false;
  // --kernel-allow: requests the policy allows whatever their parameters run untrapped
  // (enforce mode without a trace); off traps every device ioctl.
  bool kernel_allow = true;
  // --lsm: the BPF LSM ioctl judge (proxy/sandbox/ioctl_lsm.h).
  LsmChoice lsm = LsmChoice::kOff;
  // --trap-copy: trapped ioctls' devices and arguments copied in the caller's context
  // (proxy/observe/trap_copy.h).
  TrapCopyChoice trap_copy = TrapCopyChoice::kAuto;
};

// Returns the command's exit status (128+signal if it was killed). Throws gdrproxy::Error for
// setup errors (bad policy, unknown grant, kernel without seccomp notify).
int run_supervised(const RunOptions& options);

}  // namespace gdrproxy::proxy
