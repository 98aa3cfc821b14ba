// Starts the sandboxed command. The idea not to miss: the sandbox's lifetime is bound to the
// supervisor by the kernel, not by bookkeeping. The first child is pid 1 of a new pid namespace,
// with PR_SET_PDEATHSIG(SIGKILL): when the supervisor dies, even by SIGKILL, pid 1 is killed and
// the kernel kills every other process of the namespace with it, a double-forked daemon too.
// (A cgroup killed on exit would need a survivor to do the killing; PDEATHSIG alone covers only
// the first process.) That pid 1 is a small init of ours, never the command: the kernel drops
// signals to a namespace's init that has no handler, so it relays the forwarded signals to the
// command, reaps orphans, and exits with the command's status once every process is gone.
// Setup, in pid 1, in this order: a private /proc for the namespace (so that /proc/<getpid()>
// is the caller), no_new_privs, dropping the capabilities device work does not need, the
// Landlock guard, the seccomp filters; then it hands the listener fd to the parent over a
// socketpair, waits for the parent to be ready, and starts the command.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "proxy/devices/device_catalog.h"
#include "proxy/sandbox/landlock_guard.h"
#include "proxy/sandbox/notify_filter.h"

namespace gdrproxy::proxy {

struct LaunchSpec {
  std::vector<std::string> argv;
  LandlockLevel landlock;  // abi 0: no Landlock domain
  FilterOptions filter;
  // Run the sandbox in its own pid namespace (needs CAP_SYS_ADMIN; see can_bind_lifetime()).
  bool pid_namespace = false;
  // Keep every capability (gdrproxy run --keep-caps); by default dropped_capabilities() go.
  bool keep_caps = false;
  bool quiet = false;  // no warnings on stderr from the child's setup
};

struct Launched {
  pid_t pid = -1;
  int notify_fd = -1;
  int ready_fd = -1;  // write one byte to let the child start the command
};

// Whether this process may give the sandbox a pid namespace of its own.
bool can_bind_lifetime();

// The capabilities a sandbox loses unless --keep-caps: node creation, raw I/O and memory,
// administration (mount, namespaces, most device configuration), ptrace of other uids, module
// loading, reboot, clock, MAC, BPF and perf, audit, DAC_READ_SEARCH (open_by_handle_at).
// Kept: what device work and ordinary programs use (IPC_LOCK to pin memory for RDMA, NET_RAW for
// raw-packet QPs, SETUID/SETGID, CHOWN, DAC_OVERRIDE, FOWNER, KILL, SYS_NICE, SYS_RESOURCE, ...).
const std::vector<int>& dropped_capabilities();

// Throws gdrproxy::Error when the child could not be set up (the child's reason included).
Launched launch_sandboxed(const LaunchSpec& spec, const DeviceCatalog& catalog,
                          const Grants& grants);

}  // namespace gdrproxy::proxy
