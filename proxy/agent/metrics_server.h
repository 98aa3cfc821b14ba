// `gdrproxy agent --metrics ADDR`: GET /metrics answered with the agent's page (metrics_text.h)
// over a minimal HTTP/1.x responder, on the agent's loop. The idea not to miss: a scraper is one
// more connection the loop reads asynchronously with one total deadline and a small cap
// (handshakes.h), its request bounded in size, so a scraper that sends nothing, trickles or
// floods can cost only its own connection, never a container's call (those are served on the
// sessions' own threads) nor a runtime's handover. ADDR is a unix socket path (root only, mode
// 0600, as the agent's other sockets) or 127.0.0.1:PORT / 0.0.0.0:PORT (a pod's network).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "proxy/agent/handshakes.h"
#include "proxy/agent/root_sockets.h"

namespace gdrproxy::proxy {

// A request's head may be at most this long; at most this many scrapers are read at once (a new
// one closes the oldest).
inline constexpr size_t kMaxMetricsRequest = 8192;
inline constexpr size_t kMaxScrapers = 4;

struct MetricsAddress {
  std::optional<std::string> path;  // a unix socket
  std::string host;                 // "127.0.0.1" or "0.0.0.0"
  uint16_t port = 0;
};
// Throws gdrproxy::Error naming what is wrong.
MetricsAddress parse_metrics_address(const std::string& addr);

// The answer to one request head (everything up to its blank line): 200 with `page()` for
// GET /metrics, 404 for another path, 405 for another method, 400 for what is no HTTP/1.x request.
std::string metrics_http_answer(const std::string& head, const std::function<std::string()>& page);

class MetricsServer {
 public:
  MetricsServer(boost::asio::io_context& io, const MetricsAddress& addr,
                std::chrono::milliseconds deadline, AgentLog log);
  ~MetricsServer();
  // Serves each scraper `page()` (called on the loop), until the loop stops.
  void serve(std::function<std::string()> page);

 private:
  void accept_next();
  void on_connection(int fd);
  boost::asio::io_context& io_;
  std::optional<std::string> path_;
  std::optional<LocalAcceptor> local_;
  std::optional<boost::asio::ip::tcp::acceptor> tcp_;
  Handshakes handshakes_;
  const AgentLog log_;
  std::function<std::string()> page_;
};

}  // namespace gdrproxy::proxy
