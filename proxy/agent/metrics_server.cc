#include "proxy/agent/metrics_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/ip/address_v4.hpp>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "base/error.h"
#include "base/unix_request.h"
#include "proxy/agent/state_socket.h"

namespace gdrproxy::proxy {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

MetricsAddress parse_metrics_address(const std::string& addr) {
  MetricsAddress a;
  if (!addr.empty() && addr[0] == '/') {
    a.path = addr;
    return a;
  }
  const auto colon = addr.rfind(':');
  const std::string host = colon == std::string::npos ? "" : addr.substr(0, colon);
  const std::string port = colon == std::string::npos ? "" : addr.substr(colon + 1);
  const auto bad = [&](const std::string& why) {
    return Error("--metrics " + addr + ": " + why +
                 "; expected a unix socket path (/run/gdrproxy/metrics.sock), 127.0.0.1:PORT, or "
                 "0.0.0.0:PORT for a pod's network");
  };
  if (host != "127.0.0.1" && host != "0.0.0.0")
    throw bad(host.empty() ? "no HOST:PORT nor an absolute path"
                           : "the host may be only 127.0.0.1 or 0.0.0.0");
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    throw bad("the port is no number");
  const unsigned long n = std::stoul(port);
  if (n == 0 || n > 65535) throw bad("the port is not within 1-65535");
  a.host = host;
  a.port = static_cast<uint16_t>(n);
  return a;
}

namespace {

std::string http(const char* status, const std::string& type, const std::string& body) {
  return std::string("HTTP/1.1 ") + status + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         body;
}

}  // namespace

std::string metrics_http_answer(const std::string& head, const std::function<std::string()>& page) {
  const std::string line = head.substr(0, head.find_first_of("\r\n"));
  const auto sp1 = line.find(' ');
  const auto sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
  constexpr const char* kText = "text/plain; charset=utf-8";
  if (sp2 == std::string::npos || line.compare(sp2 + 1, 7, "HTTP/1.") != 0)
    return http("400 Bad Request", kText, "not an HTTP/1.x request\n");
  const std::string method = line.substr(0, sp1);
  const std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (target != "/metrics" && target.rfind("/metrics?", 0) != 0)
    return http("404 Not Found", kText, "only /metrics is served here\n");
  if (method != "GET") return http("405 Method Not Allowed", kText, "only GET is served here\n");
  return http("200 OK", "text/plain; version=0.0.4; charset=utf-8", page());
}

MetricsServer::MetricsServer(asio::io_context& io, const MetricsAddress& addr,
                             std::chrono::milliseconds deadline, AgentLog log)
    : io_(io), path_(addr.path), handshakes_(deadline, kMaxScrapers), log_(std::move(log)) {
  if (addr.path) {
    local_.emplace(bind_root_only(io, *addr.path));
    local_->non_blocking(true);
    return;
  }
  const tcp::endpoint ep(asio::ip::make_address_v4(addr.host), addr.port);
  tcp_.emplace(io);
  boost::system::error_code ec;
  tcp_->open(ep.protocol(), ec);
  if (!ec) tcp_->set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) tcp_->bind(ep, ec);
  if (!ec) tcp_->listen(16, ec);
  if (!ec) tcp_->non_blocking(true, ec);
  if (ec)
    throw Error("--metrics: cannot listen on " + addr.host + ":" + std::to_string(addr.port) +
                ": " + ec.message());
}

MetricsServer::~MetricsServer() {
  if (path_) ::unlink(path_->c_str());
}

void MetricsServer::serve(std::function<std::string()> page) {
  page_ = std::move(page);
  accept_next();
}

// Waits for the listening socket to be readable, then takes every connection queued (accept4 on
// a non-blocking socket: a connection gone meanwhile costs nothing).
void MetricsServer::accept_next() {
  const auto on_ready = [this](const boost::system::error_code& ec) {
    if (ec == asio::error::operation_aborted) return;
    const int lfd = local_ ? local_->native_handle() : tcp_->native_handle();
    for (int i = 0; i < 64 && !ec; ++i) {
      const int fd = ::accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
          log_(std::string("cannot accept a scraper: ") + std::strerror(errno));
        break;
      }
      try {
        on_connection(fd);
      } catch (const std::exception& e) {
        log_(std::string("internal error on a scraper's connection (closed): ") + e.what());
      }
    }
    accept_next();
  };
  if (local_)
    local_->async_wait(LocalAcceptor::wait_read, on_ready);
  else
    tcp_->async_wait(tcp::acceptor::wait_read, on_ready);
}

// One request head, read asynchronously within the deadline and at most kMaxMetricsRequest bytes
// long, answered and closed. On the unix socket only root's connections are read.
void MetricsServer::on_connection(int fd) {
  LocalSocket s(io_);
  s.assign(asio::local::stream_protocol(), fd);
  if (local_) {
    const auto cred = peer_credentials(s.native_handle());
    if (!cred || cred->uid != 0) return;
  }
  auto head = std::make_shared<std::string>();
  handshakes_.add(
      std::move(s),
      [this, head](int c) -> std::optional<std::string> {
        char buf[2048];
        for (;;) {
          const ssize_t n = ::recv(c, buf, sizeof buf, MSG_DONTWAIT);
          if (n < 0 && errno == EINTR) continue;
          if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return std::nullopt;
          if (n <= 0) return std::string();
          head->append(buf, static_cast<size_t>(n));
          if (head->find("\r\n\r\n") != std::string::npos ||
              head->find("\n\n") != std::string::npos)
            return metrics_http_answer(*head, page_);
          if (head->size() > kMaxMetricsRequest)
            return std::string(
                "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\n"
                "Connection: close\r\n\r\n");
        }
      },
      [this](const std::string& why) { log_("a scraper's connection " + why); });
}

}  // namespace gdrproxy::proxy
