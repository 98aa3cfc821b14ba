// The kernel's answers to the call handler's questions (call_inputs.h): process_vm_readv of the
// caller's memory, one statx of its fd through a cached /proc/<tid>/fd directory, /proc for who
// it is, SECCOMP_IOCTL_NOTIF_ID_VALID on the listener of the call being handled, the NVIDIA
// driver for its GPUs, the open broker, and pidfds. The idea not to miss: one object per session,
// used by one call at a time (the session's mutex), so what it caches (fd directories, identities
// by tid) needs no lock, and the memory reader of a call lives here, not on the heap.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "proxy/broker/open_broker.h"
#include "proxy/devices/device_catalog.h"
#include "proxy/devices/live_catalog.h"
#include "proxy/engine/call_inputs.h"
#include "proxy/engine/proc_fd_dirs.h"
#include "proxy/mem/process_memory.h"

namespace gdrproxy::proxy {

struct NvidiaDriver;

class KernelInputs final : public CallerMemory,
                           public CallerFiles,
                           public Callers,
                           public GpuInstances,
                           public OpenPaths,
                           public PidfdTargets {
 public:
  // `catalog`, `later`, `grants` and `nvidia` outlive this; `deny_errno` is the open broker's.
  KernelInputs(const DeviceCatalog& catalog, const LiveCatalog& later, const Grants& grants,
               int deny_errno, const NvidiaDriver& nvidia);

  CallInputs inputs() { return {*this, *this, *this, *this, *this, *this}; }
  // The listener of the notification being handled (ID_VALID asks it).
  void set_listener(int nfd) { nfd_ = nfd; }

  const MemoryReader& begin(pid_t tid, uint64_t* ns, uint64_t primed_at,
                            std::span<const uint8_t> primed) override;
  bool read_remotely() const override { return memory_ && memory_->read_remotely(); }

  const DeviceNode* device(dev_t rdev) const override;
  bool inspect_fd(pid_t tid, int fd, const DeviceNode*& node) override;
  DmabufVerdict dmabuf(pid_t tid, int fd, const std::vector<std::string>& exporters) override;

  // Cached by tid while /proc/<tid> keeps its inode (a reused pid gets a new one).
  const ProcessIdentity& identity(pid_t tid) override;
  bool still_waiting(uint64_t id) override;

  std::optional<std::vector<NvidiaGpu>> gpus(std::string& why) override;

  bool decide(const seccomp_notif& req, OpenCall& call, OpenDecision& d) override;

  ino_t own_pid_namespace() override;
  Target target(pid_t tid, int pidfd_nr) override;
  TakenFd take(pid_t tid, int target_pidfd, int target_fd) override;

 private:
  const DeviceCatalog& catalog_;
  const LiveCatalog& later_;
  const NvidiaDriver& nvidia_;
  const OpenBroker broker_;
  int nfd_ = -1;
  std::optional<ProcessMemory> memory_;  // the current call's
  ProcFdDirs fd_dirs_;                   // the callers' /proc/<tid>/fd directories
  std::map<pid_t, std::pair<ino_t, ProcessIdentity>> identities_;
};

}  // namespace gdrproxy::proxy
