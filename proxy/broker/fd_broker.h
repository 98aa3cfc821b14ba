// The pidfd_getfd broker: takes a target's fd for a caller whose own pidfd_getfd is trapped.
//
// The idea not to miss: the supervisor holds CAP_SYS_PTRACE, so a pidfd_getfd performed with its
// rights takes what the caller never could (a confused deputy). `runc exec` and `crun exec` put a
// helper into the container before it execs the command; it holds the exec'd process's seccomp
// listener, the init socket to the host runtime, the host's state files, and is made
// non-dumpable so the container cannot take them. So the broker acts only where the caller itself
// would pass the kernel's check, and never on such a helper:
//  - policy (runtime_helper_reason): a target whose program is on no mount of its own mount
//    namespace has not exec'd a program of its container, and is refused. Both runtimes' helpers
//    run the runtime from outside the container: Debian's runc 1.1.5 from a detached read-only
//    bind of its binary, crun 1.8 from a memfd copy or the host's file. A mount belongs to one
//    namespace and a bind makes a new one, so a tenant cannot put the helper's program on a
//    mount of the container; a tenant process whose program is a memfd, or was unmounted, only
//    makes itself unreachable.
//  - mechanism (take_fd_as_caller): the call is performed by a prober (a clone of the calling
//    thread) with the caller's credentials (its user namespace, real/effective/saved uids and
//    gids, its capabilities with CAP_SYS_PTRACE taken out of the effective set), so the kernel
//    decides at the call, as for the caller short of CAP_SYS_PTRACE: PTRACE_MODE_ATTACH_REALCREDS
//    (same ids, target dumpable, target's permitted capabilities within the caller's) and any
//    LSM. Yama's ptrace_scope >= 1 refuses every target: the prober is no ancestor.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "base/unique_fd.h"

namespace gdrproxy::proxy {

// Why the process behind `pid` is a runtime's helper that has not exec'd the container's program
// (one line, the path escaped), or nullopt. Unreadable counts as a helper: the broker refuses.
std::optional<std::string> runtime_helper_reason(pid_t pid);

// The credentials the kernel's ptrace check reads of a task: ids as this process's user
// namespace sees them, capability sets as the task's own.
struct TaskCredentials {
  uid_t uid[3] = {0, 0, 0};  // real, effective, saved
  gid_t gid[3] = {0, 0, 0};
  uint64_t cap_inh = 0, cap_prm = 0, cap_eff = 0;
};

// The credentials of task `tid` from /proc/<tid>/status; nullopt when unreadable.
std::optional<TaskCredentials> read_task_credentials(pid_t tid);

// The pure part: parses the text of /proc/<tid>/status (the tenant's bytes: never throws).
std::optional<TaskCredentials> parse_task_credentials(const std::string& status);

struct TakenFd {
  UniqueFd fd;      // the target's file, O_CLOEXEC (as pidfd_getfd gives it); empty on failure
  int err = 0;      // the errno the caller gets when fd is empty
  std::string why;  // one line, when fd is empty
};

// pidfd_getfd(target_pidfd, target_fd, 0) performed by a prober with the credentials of the
// caller's thread `caller_tid` (read here; the caller is blocked in its trapped call, so they
// cannot change under it). The kernel's answer is the caller's: EPERM where the caller could not
// take the fd itself short of CAP_SYS_PTRACE.
TakenFd take_fd_as_caller(pid_t caller_tid, int target_pidfd, int target_fd);

}  // namespace gdrproxy::proxy
