// How many times an agent started before this one, for `gdrproxy_agent_restarts_total`. The idea
// not to miss: no process lives across a restart to count it, so each agent counts itself in a
// file beside its control socket (/run/gdrproxy/agent.starts on a node): the control socket's
// bind check has already made this agent the only one serving there, and /run is a tmpfs, so the
// count is since the node's boot, across the agent's own restarts (a DaemonSet mounts that
// directory from the host). A file that is not a regular file of ours holding a number is not
// believed: the count starts again from this start, and the reason is returned to be logged.
#pragma once

#include <cstdint>
#include <string>

namespace gdrproxy::proxy {

inline constexpr const char* kAgentStartsFile = "agent.starts";

struct AgentStarts {
  uint64_t before = 0;  // starts recorded before this one
  std::string note;     // why the record was not believed or not written; empty when it was
};

// Reads the count in `dir`/agent.starts and records this start there.
AgentStarts record_agent_start(const std::string& dir);

}  // namespace gdrproxy::proxy
