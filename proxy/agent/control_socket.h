// The agent's control socket (`gdrproxy agent ctl`): one short command a connection, answered in
// JSON lines. The idea not to miss: the socket sees the agent only through ControlVerbs, a
// read-only view of its containers plus the three verbs that change anything (drain, drain one,
// judge-pending); the reading and answering run on the loop within the handshake deadline, so a
// silent or slow control client costs nothing but its own connection.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "proxy/agent/handshakes.h"
#include "proxy/agent/pod_identity.h"
#include "proxy/agent/root_sockets.h"
#include "proxy/engine/session_stats.h"
#include "proxy/policy/policy.h"

namespace gdrproxy::proxy {

// One container as `ctl list` and `ctl stats` show it: a copy, taken on the loop.
struct ContainerView {
  std::string id;
  pid_t pid = 0;
  ino_t pidns = 0;
  std::string cgroup, status, bundle, rule;
  PodIdentity pod;  // listed as "pod", "container" and "kind" where its bundle named them
  std::vector<std::string> grants;
  Mode mode = Mode::kEnforce;
  unsigned listeners = 0;
  bool draining = false;
  // nullopt: the agent has no judge; "cgroup": judged in the kernel by its cgroup; else why not.
  std::optional<std::string> judged_in_kernel;
  SessionStats stats;  // `ctl stats` only
};

// What the control socket may ask of the agent.
class ControlVerbs {
 public:
  virtual ~ControlVerbs() = default;
  virtual std::vector<ContainerView> containers(bool with_stats) const = 0;
  // `drain`: no new container or process; the agent stops when none is left. Returns how many
  // containers are served now.
  virtual size_t drain_all() = 0;
  // `drain ID`: no new process joins that container. False: no such container.
  virtual bool drain(const std::string& id) = 0;
  // `judge-pending PID ID`: the judge's JSON line (agent_judge.h).
  virtual std::string judge_pending(const std::string& args) = 0;
};

// The answer to one command line (list, stats, drain, drain ID, judge-pending PID ID).
std::string control_answer(const std::string& command, ControlVerbs& verbs);

class ControlSocket {
 public:
  // Binds `path` first of the agent's sockets: its check finds an agent that still serves
  // (`*previous_stuck`: one that was killed and cannot finish exiting was replaced).
  ControlSocket(boost::asio::io_context& io, const std::string& path,
                std::chrono::milliseconds deadline, size_t max_handshakes, AgentLog log,
                bool* previous_stuck);
  // Serves root's connections with `verbs`, until the loop stops.
  void serve(ControlVerbs& verbs);

 private:
  void on_connection(LocalSocket s, ControlVerbs& verbs);
  LocalAcceptor acceptor_;
  Handshakes handshakes_;
  const AgentLog log_;
};

}  // namespace gdrproxy::proxy
