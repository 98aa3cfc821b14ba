// The agent's two sockets (runtimes', control's): bound for root alone, accepted on for ever. The
// idea not to miss: a socket path that answers belongs to a live agent and is never taken over,
// unless that agent was killed and cannot finish exiting; accepting never stops on its own (a
// failed accept, out of fds, is retried), and a handler's exception costs its connection only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <functional>
#include <string>

namespace gdrproxy::proxy {

using LocalSocket = boost::asio::local::stream_protocol::socket;
using LocalAcceptor = boost::asio::local::stream_protocol::acceptor;
using AgentLog = std::function<void(const std::string&)>;

// Binds a root-only stream socket at `path` (mode 0600 in a 0700 directory made if missing); a
// stale socket nobody serves (or only a killed agent that cannot finish exiting) is replaced
// (`*replaced_stuck` set), a live one is an error (gdrproxy::Error).
LocalAcceptor bind_root_only(boost::asio::io_context& io, const std::string& path,
                             bool* replaced_stuck = nullptr);

// Serves `acceptor` with `handle` for each connection, on the loop, while `wanted()` holds; a
// handler's exception is logged and costs that connection only; a failed accept is retried in
// 100 ms. `acceptor` must outlive the loop's run.
void accept_each(LocalAcceptor& acceptor, std::function<void(LocalSocket)> handle,
                 std::function<bool()> wanted, std::string what, AgentLog log);

}  // namespace gdrproxy::proxy
