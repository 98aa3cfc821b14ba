// What a session is given: its name, policy, grants, mode, trace sinks and the choices that
// decide what it may do (deadline, pidfd_getfd brokering, requests the kernel lets run, the BPF
// LSM judge). The idea not to miss: the session derives everything else from this and the engine
// (session_setup.h); nothing here changes once it serves.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "proxy/devices/device_catalog.h"
#include "proxy/engine/call_metrics.h"
#include "proxy/policy/policy.h"
#include "proxy/sandbox/ioctl_lsm.h"

namespace gdrproxy::proxy {

struct SessionConfig {
  std::string name;  // shown in notes: "" for `gdrproxy run`, the container id for the agent
  // Where its calls are counted for the agent's metrics (call_metrics.h); none for `gdrproxy run`.
  std::shared_ptr<CallMetrics> metrics;
  Policy policy;
  Grants grants;
  Mode mode = Mode::kEnforce;
  bool trace_text = false;                // text lines on stderr
  std::optional<std::string> trace_json;  // JSONL file, opened close-on-exec
  // Add to trace_json rather than start it anew: the agent's container re-attached from the fd
  // store after a restart keeps the records its previous agent wrote (a line that agent left
  // unfinished is ended first, so that each record stays a line of its own).
  bool trace_append = false;
  bool quiet = false;  // no notes on stderr (denial lines stay)
  // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP on every listener; nullopt = by CPU count.
  std::optional<bool> sync_wakeup;
  // An NVIDIA driver the ABI tables do not know: police NVIDIA calls trace-only rather than
  // refuse to start in enforce mode.
  bool allow_unknown_nvidia_driver = false;
  // > 0: a call not answered within this many ms (its path lookup, or a read of the caller's
  // memory, blocked on the tenant: a hung FUSE mount) is answered EIO by the engine's watchdog,
  // and the session is marked degraded (its next calls wait for its thread).
  // 0: no deadline (`gdrproxy run`: the only tenant can stall only itself).
  unsigned blocking_deadline_ms = 0;
  // Perform trapped pidfd_getfd calls whose target is a process of this sandbox (its pid
  // namespace, set_pid_namespace) with the supervisor's rights, and inject the fd.
  bool broker_pidfd_getfd = false;
  // Let the requests this policy allows whatever their parameters run in the kernel, untrapped
  // (enforce mode without a trace only): the session computes them, the launcher installs them.
  // For an agent's container the runtime installed them from its profile: set when the profile
  // holds some, which the agent checked against container_untrapped_ioctls (kernel_judgement.h).
  bool kernel_allow = false;
  // The BPF LSM ioctl judge (proxy/sandbox/ioctl_lsm.h; `gdrproxy run` only): off; on (refuse
  // to start where the kernel cannot run it); auto (use it where it can).
  LsmChoice lsm = LsmChoice::kOff;
  // A BPF LSM judge the session does not load judges its tasks per device (the agent's, pinned,
  // over the container's cgroup): its untrapped requests then qualify where some node of their
  // class is granted, as with `lsm` (kernel_allow.h).
  bool judged_per_device = false;
  // The container is unconfined (privileged: proxy/oci/container_privilege.h) and its operator
  // accepted that (runtime.json "accept_unconfined"): what makes it so. The session says it once
  // and, when tracing, its trace opens with a record saying so.
  std::optional<std::string> unconfined;
};

}  // namespace gdrproxy::proxy
