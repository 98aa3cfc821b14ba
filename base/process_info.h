// Who made a call: host tid/tgid, the tid as its pid namespace sees it, and that namespace's id.
// The supervisor keys its state by host tid (unique in its own pid namespace, validated against
// pid reuse); traces carry (pidns, ns pid), so two containers whose processes share a pid are
// never mixed.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace gdrproxy {

struct ProcessIdentity {
  uint32_t host_tid = 0;
  uint32_t host_tgid = 0;
  uint32_t ns_tid = 0;   // the thread id as the container sees it (last NSpid entry)
  uint32_t ns_tgid = 0;  // its process id there (last NStgid entry)
  uint64_t pidns = 0;    // inode of /proc/<tid>/ns/pid
  std::string comm;
};

// Reads /proc/<tid>/status and /proc/<tid>/ns/pid. Fields stay 0/empty when unreadable (the
// process may be gone).
ProcessIdentity read_process_identity(pid_t host_tid);

// The pure part of read_process_identity: the texts of /proc/<tid>/status and /proc/<tid>/comm
// (both the tenant's bytes) to host_tgid, ns_tgid, ns_tid and comm. Never throws on any input:
// a missing field stays 0, a malformed number reads as 0, and comm is `comm` minus one trailing
// newline. host_tid and pidns are left 0 (they do not come from these texts).
ProcessIdentity parse_process_identity(std::string_view status, std::string_view comm);

// This process's pid namespace's inode number (/proc/self/ns/pid), 0 when unreadable: BPF
// programs report tasks by their ids in that namespace, the ids this process's syscalls use.
// (Its depth cannot be learnt from inside: NSpid starts at the /proc mount's namespace.)
uint32_t own_pid_namespace_inode();

// The inode of /proc/<pid>/ns/pid (the pid namespace's identity); 0 when unreadable.
ino_t pid_namespace_of(pid_t pid);
// Whether this process is in the initial pid namespace (one NSpid in /proc/self/status; true on a
// kernel without NSpid, which has no pid namespaces to be in).
bool in_initial_pid_namespace();
// The pid (in our pid namespace) of the process behind `pidfd`, from /proc/self/fdinfo; <= 0 when
// it is not a pidfd or its process is gone (kernels before 5.13 may still show its number: check
// that the pidfd still signals).
pid_t pid_of_pidfd(int pidfd);

// Whether `pid` is a killed process that cannot finish exiting: a thread of it blocked in the
// kernel (a FUSE request its server never answers) while its main thread is a zombie, or is that
// thread itself with SIGKILL pending. Its fds, and the locks and sockets they hold, stay until
// that thread returns; it serves nothing.
bool killed_but_not_gone(pid_t pid);
// The inode of /proc/<pid>/ns/mnt; 0 when unreadable.
ino_t mount_namespace_of(pid_t pid);
// The cgroup v2 path of /proc/<pid>/cgroup ("/system.slice/x.scope"); "" when unreadable or the
// process is only in v1 hierarchies.
std::string cgroup_of(pid_t pid);

}  // namespace gdrproxy
