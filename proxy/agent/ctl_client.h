// The client side of the agent's control socket (`gdrproxy agent ctl`, and the `gdrproxy hook
// judge` a runtime runs): one command line out, the agent's answer back. The idea not to miss:
// the agent answers each command and closes, so the answer is whatever arrives before the end of
// the stream, within a deadline (an agent that does not answer must not hold a runtime's hook).
#pragma once

#include <string>

namespace gdrproxy::proxy {

// Sends `command` to the agent at `ctl_socket` and returns its answer (may be empty). Throws
// gdrproxy::Error naming the socket when there is no agent there or it does not answer within
// `timeout_ms`.
std::string ask_agent(const std::string& ctl_socket, const std::string& command, int timeout_ms);

}  // namespace gdrproxy::proxy
