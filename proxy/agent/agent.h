// `gdrproxy agent`: the long-running process OCI runtimes hand their containers' seccomp
// listeners to (`linux.seccomp.listenerPath`). One Engine, one Session per container: each
// process the runtime starts in a container (runc: the init process, then one per `runc exec`)
// arrives on its own connection with its own listener fd, and joins its container's session.
// The idea not to miss: only root may connect (socket mode 0600, SO_PEERCRED uid 0), and what a
// container gets comes from the operator's agent config matched on the runtime's report, never
// from anything the tenant wrote; a container whose session cannot be set up gets its listener
// closed, so its trapped calls fail with ENOSYS rather than run unpoliced.
#pragma once

#include <optional>
#include <string>

#include "proxy/observe/trap_copy.h"
#include "proxy/oci/agent_sockets.h"
#include "proxy/sandbox/ioctl_lsm.h"

namespace gdrproxy::proxy {

// Each connection to the agent (a runtime handing over a listener, a `ctl` command) is read
// asynchronously and must be done within this many ms in total, however its peer trickles its
// bytes; at most kMaxHandshakes of each socket are read at once, and a new one closes the oldest.
inline constexpr unsigned kHandshakeDeadlineMs = 2000;
inline constexpr unsigned kMaxHandshakes = 64;

struct AgentOptions {
  std::string socket = kAgentSocket;         // where runtimes connect
  std::string ctl_socket = kAgentCtlSocket;  // `gdrproxy agent ctl`
  std::optional<std::string> config;         // nullopt: every container gets no device
  std::optional<std::string> trace_dir;      // per-container JSONL traces
  // Keep each listener in a holder process at this socket, so that a restarted agent re-attaches
  // every running container (trapped calls wait for it meanwhile instead of failing with ENOSYS;
  // one a killed agent was handling fails with EINTR).
  std::optional<std::string> fd_store;
  // The fd store's holder is another process's (`gdrproxy agent fd-store PATH`, a container of
  // the agent's pod): waited for at start (kExternalHolderWait), and never started here.
  bool fd_store_external = false;
  std::string dev_root = "/dev";
  // An open whose path lookup or host open has not finished by then fails with EIO and marks
  // its container's session degraded (a hung FUSE mount must cost that container, not others).
  unsigned blocking_deadline_ms = 2000;
  unsigned handshake_deadline_ms = kHandshakeDeadlineMs;
  unsigned max_handshakes = kMaxHandshakes;
  bool quiet = false;
  bool sync_wakeup = false;  // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP on every listener
  // Trapped ioctls' devices and arguments copied in their callers' context, for every container
  // (proxy/observe/trap_copy.h).
  TrapCopyChoice trap_copy = TrapCopyChoice::kAuto;
  // The BPF LSM ioctl judge, one program for every container, each judged by its cgroup v2
  // (proxy/sandbox/ioctl_lsm.h): off; on (refuse to start without it, and refuse a container it
  // cannot judge); auto (where the kernel has it).
  LsmChoice lsm = LsmChoice::kOff;
  // Pin the judge in this bpffs directory, so that it outlives the agent (a kill, a restart):
  // containers stay judged meanwhile, and profiles may then let requests run untrapped on
  // device classes only partly granted (`oci prepare --lsm-judged`).
  std::optional<std::string> lsm_pin;
  // The release whose tables judge the node's NVIDIA driver (--nvidia-abi-as; over the
  // config's "nvidia_abi_as"). Needed only for a branch the tables do not hold.
  std::optional<std::string> nvidia_abi_as;
  // Where the rail hooks keep their journals: rails of containers gone are given back at start.
  std::string rail_state_dir = "/run/gdrproxy";
  // Serve Prometheus metrics at this unix socket path or 127.0.0.1:PORT / 0.0.0.0:PORT
  // (metrics_server.h).
  std::optional<std::string> metrics;
};

// Serves until SIGTERM or SIGINT. Throws gdrproxy::Error for setup errors (bad config, socket
// in use, not in the initial pid namespace).
int run_agent(const AgentOptions& options);

// `gdrproxy agent ctl COMMAND`: sends COMMAND (list, stats, drain, judge-pending) to a running
// agent and prints its answer (one JSON object per line). Returns 0, or 1 when the agent cannot be
// reached.
int agent_ctl(const std::string& ctl_socket, const std::string& command);

}  // namespace gdrproxy::proxy
