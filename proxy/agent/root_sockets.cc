#include "proxy/agent/root_sockets.h"

#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <memory>

#include "base/error.h"
#include "base/process_info.h"
#include "base/unix_request.h"
#include "proxy/agent/state_socket.h"

namespace gdrproxy::proxy {

namespace asio = boost::asio;
using local = asio::local::stream_protocol;

LocalAcceptor bind_root_only(asio::io_context& io, const std::string& path, bool* replaced_stuck) {
  const auto slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    const std::string dir = path.substr(0, slash);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      throw_errno("cannot create " + dir, errno);
  }
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) throw Error(path + " exists and is not a socket");
    local::socket probe(io);
    boost::system::error_code ec;
    probe.connect(local::endpoint(path), ec);
    if (!ec) {
      const auto server = peer_credentials(probe.native_handle());
      if (!server || !killed_but_not_gone(server->pid))
        throw Error(path + ": another agent is serving it");
      std::fprintf(stderr,
                   "gdrproxy agent: %s: its agent (pid %d) was killed and cannot finish exiting (a "
                   "thread blocked in the kernel): replaced\n",
                   path.c_str(), server->pid);
      if (replaced_stuck) *replaced_stuck = true;
    }
    ::unlink(path.c_str());
  }
  const mode_t old = ::umask(0177);
  local::acceptor a(io);
  boost::system::error_code ec;
  a.open(local(), ec);
  if (!ec) a.bind(local::endpoint(path), ec);
  ::umask(old);
  // Room for the runtimes that connect while an agent restarts (they wait here; see fd_store.h).
  if (!ec) a.listen(1024, ec);
  if (ec) throw Error("cannot listen on " + path + ": " + ec.message());
  ::chmod(path.c_str(), 0600);
  return a;
}

namespace {

struct AcceptLoop : std::enable_shared_from_this<AcceptLoop> {
  LocalAcceptor& acceptor;
  std::function<void(LocalSocket)> handle;
  std::function<bool()> wanted;
  std::string what;
  AgentLog log;

  AcceptLoop(LocalAcceptor& a, std::function<void(LocalSocket)> h, std::function<bool()> w,
             std::string wh, AgentLog l)
      : acceptor(a),
        handle(std::move(h)),
        wanted(std::move(w)),
        what(std::move(wh)),
        log(std::move(l)) {}

  void next() {
    acceptor.async_accept(
        [self = shared_from_this()](const boost::system::error_code& ec, LocalSocket s) {
          self->accepted(ec, std::move(s));
        });
  }

  void accepted(const boost::system::error_code& ec, LocalSocket s) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) {
      log("cannot accept " + what + ": " + ec.message() + " (retrying in 100 ms)");
      auto t = std::make_shared<asio::steady_timer>(acceptor.get_executor(),
                                                    std::chrono::milliseconds(100));
      t->async_wait([self = shared_from_this(), t](const boost::system::error_code& e) {
        if (!e && self->wanted()) self->next();
      });
      return;
    }
    try {
      handle(std::move(s));
    } catch (const std::exception& e) {
      log("internal error on " + what + " (closed): " + e.what());
    }
    if (wanted()) next();
  }
};

}  // namespace

void accept_each(LocalAcceptor& acceptor, std::function<void(LocalSocket)> handle,
                 std::function<bool()> wanted, std::string what, AgentLog log) {
  std::make_shared<AcceptLoop>(acceptor, std::move(handle), std::move(wanted), std::move(what),
                               std::move(log))
      ->next();
}

}  // namespace gdrproxy::proxy
