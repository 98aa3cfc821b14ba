#include "proxy/engine/kernel_inputs.h"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "base/hot_path.h"
#include "base/process_info.h"
#include "proxy/engine/engine.h"
#include "proxy/engine/seccomp_notify.h"

namespace gdrproxy::proxy {

KernelInputs::KernelInputs(const DeviceCatalog& catalog, const LiveCatalog& later,
                           const Grants& grants, int deny_errno, const NvidiaDriver& nvidia)
    : catalog_(catalog),
      later_(later),
      nvidia_(nvidia),
      broker_(catalog, grants, deny_errno, &later) {}

GDRPROXY_HOT const MemoryReader& KernelInputs::begin(pid_t tid, uint64_t* ns, uint64_t primed_at,
                                                     std::span<const uint8_t> primed) {
  ProcessMemory& m = memory_.emplace(tid, ns);
  if (!primed.empty()) m.prime(primed_at, primed);
  return m;
}

GDRPROXY_HOT const DeviceNode* KernelInputs::device(dev_t rdev) const {
  if (const DeviceNode* n = catalog_.find(rdev)) return n;
  return later_.uncatalogued(rdev);
}

bool KernelInputs::inspect_fd(pid_t tid, int fd, const DeviceNode*& node) {
  // Never asks a FUSE server (ProcFdDirs::stat_fd): the number may now be a file on a hung mount.
  struct statx stx {};
  node = nullptr;
  if (!fd_dirs_.stat_fd(tid, fd, stx)) return false;
  if (S_ISCHR(stx.stx_mode)) node = device(makedev(stx.stx_rdev_major, stx.stx_rdev_minor));
  return true;
}

DmabufVerdict KernelInputs::dmabuf(pid_t tid, int fd, const std::vector<std::string>& exporters) {
  return check_dmabuf_fd(tid, fd, exporters);
}

const ProcessIdentity& KernelInputs::identity(pid_t tid) {
  struct stat st {};
  ::stat(("/proc/" + std::to_string(tid)).c_str(), &st);
  auto it = identities_.find(tid);
  if (it == identities_.end() || it->second.first != st.st_ino) {
    if (identities_.size() > 4096) identities_.clear();
    it = identities_.insert_or_assign(tid, std::make_pair(st.st_ino, read_process_identity(tid)))
             .first;
  }
  return it->second.second;
}

bool KernelInputs::still_waiting(uint64_t id) {
  return notif_id_valid(nfd_, id);
}

std::optional<std::vector<NvidiaGpu>> KernelInputs::gpus(std::string& why) {
  return query_nvidia_gpus(nvidia_.ctl_path, nvidia_.version.value_or(""), why);
}

bool KernelInputs::decide(const seccomp_notif& req, OpenCall& call, OpenDecision& d) {
  // Path resolution walks the tenant's filesystems (a FUSE lookup may never be answered): on
  // this session's thread only, and the watchdog answers at the deadline.
  ProcessMemory mem(static_cast<pid_t>(req.pid));
  if (!OpenBroker::read_call(static_cast<pid_t>(req.pid), req.data.nr,
                             reinterpret_cast<const uint64_t*>(req.data.args), call, mem))
    return false;
  d = broker_.decide(call, mem);
  return true;
}

ino_t KernelInputs::own_pid_namespace() {
  return pid_namespace_of(::getpid());
}

PidfdTargets::Target KernelInputs::target(pid_t tid, int pidfd_nr) {
  Target t;
  const UniqueFd caller(static_cast<int>(::syscall(SYS_pidfd_open, tid, 0)));
  if (!caller) return t;  // kCallerGone
  t.pidfd = UniqueFd(static_cast<int>(::syscall(SYS_pidfd_getfd, caller.get(), pidfd_nr, 0)));
  if (!t.pidfd) {
    t.status = Target::Status::kUnreadable;
    return t;
  }
  t.status = Target::Status::kRead;
  t.pid = pid_of_pidfd(t.pidfd.get());
  if (t.pid <= 0) return t;
  t.pidns = pid_namespace_of(t.pid);
  t.helper = runtime_helper_reason(t.pid);
  // The pidfd pins the process: if it still signals as alive after the namespace and program
  // were read, they were of that process and not of a reused pid.
  t.alive = ::syscall(SYS_pidfd_send_signal, t.pidfd.get(), 0, nullptr, 0) == 0;
  return t;
}

TakenFd KernelInputs::take(pid_t tid, int target_pidfd, int target_fd) {
  return take_fd_as_caller(tid, target_pidfd, target_fd);
}

}  // namespace gdrproxy::proxy
