// A container the agent serves, and how a later process of it joins its session. The idea not to
// miss: what a container is was verified once, of its init through a pidfd (pid namespace,
// cgroup, bundle); a process that names it later (`runc exec`, crun's exec) joins only from that
// pid namespace, bundle and cgroup, with a profile letting run untrapped nothing its session
// would not allow unread; anything else is refused, and killed where its listener alone would not
// stop what its profile lets through.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxy/agent/agent_judge.h"
#include "proxy/agent/fd_store.h"
#include "proxy/agent/handover.h"
#include "proxy/agent/pod_identity.h"
#include "proxy/agent/root_sockets.h"
#include "proxy/engine/session.h"
#include "proxy/sandbox/profile_untrapped.h"

namespace gdrproxy::proxy {

struct ServedContainer {
  std::string id;
  std::string bundle, status, metadata, rule;
  PodIdentity pod;  // what its bundle's CRI annotations name, for the operator (unchecked)
  pid_t pid = -1;
  // What the agent verified of the init process (through its pidfd), not what the runtime said:
  // every process that later joins the container must be in this pid namespace.
  ino_t pidns = 0;
  std::string cgroup;
  std::optional<std::string> group;  // the rule's pidfd_getfd_group
  unsigned listeners = 0;
  bool draining = false;  // `ctl drain ID`: no new process joins; served until its last exits
  std::vector<std::string> grants;
  Mode mode = Mode::kEnforce;
  // How the judge judges it (its scope: nullptr when not judged in the kernel). Declared before
  // the session: forgotten after it stopped.
  ContainerJudgement judged;
  std::unique_ptr<Session> session;
};

// What a join needs of the agent: its fd store (may be null), its log, its loop, and its check
// of the holder (for a holder that did not answer).
struct JoinContext {
  FdStoreClient* store = nullptr;
  AgentLog log;
  boost::asio::io_context& io;
  std::function<void()> check_holder;
};

// A process of a container already served (`runc exec`) joins its session, if it is one of the
// container's: in its pid namespace, from its bundle, in its cgroup when the judge judges it
// there, its profile letting run untrapped nothing the session would not allow unread. False:
// refused (said).
bool join(ServedContainer& c, const ContainerProcessState& st, Handover& h, const std::string& json,
          const ProfileUntrapped& untrapped, const JoinContext& ctx);

// A process its runtime did not name (crun's `exec` sends pid 0) joins its container's session
// bound to the first caller received on its listener: that caller must be in the container's pid
// namespace and in its cgroup (or below it), checked through a pidfd opened while its call is
// pending (check_first_caller); otherwise the listener is refused (every call ENOSYS), and the
// process killed when the container is judged in the kernel (outside the judged cgroup its
// profile's untrapped requests would run unjudged). Its fd-store entry is made once it is bound,
// with that pid.
bool join_unnamed(ServedContainer& c, const ContainerProcessState& st, Handover& h,
                  const std::string& json, const ProfileUntrapped& untrapped,
                  const JoinContext& ctx);

// Hands the handover's listener and id page to `c`'s session. One fd-store entry per process, with
// the pidfd checked here (the holder drops it when the process exits); one put on receipt or from
// the store is there already. The client keeps copies too, for a holder that has to be replaced.
void give_listener(ServedContainer& c, Handover& h, const ContainerProcessState& st,
                   const std::string& json, const JoinContext& ctx);

// A process whose profile lets calls run untrapped that its container may not make: its listener
// alone would not stop them, so it is killed (a container's init: the container).
void kill_refused(int pidfd, const std::string& who, const std::string& why, const AgentLog& log);

}  // namespace gdrproxy::proxy
