// A request over a unix socket: connect, one line, read to the end, all under one deadline.
#include "base/unix_request.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/error.h"
#include "base/escape.h"
#include "base/unique_fd.h"

namespace gdrproxy {

std::string ask_unix_socket(const std::string& path, const std::string& peer,
                            const std::string& line, int timeout_ms) {
  const std::string where = peer + " " + printable(path);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    throw Error("bad socket path for " + peer + ": " + printable(path));
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  const UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) throw_errno("socket", errno);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 &&
      errno != EINPROGRESS && errno != EAGAIN)
    throw Error("nothing answers at " + where + ": " + std::strerror(errno));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  const auto wait_for = [&](short events) {
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      if (left <= 0)
        throw Error(where + " did not answer within " + std::to_string(timeout_ms) + " ms");
      pollfd p{fd.get(), events, 0};
      const int n = ::poll(&p, 1, static_cast<int>(left));
      if (n > 0) return;
      if (n < 0 && errno != EINTR) throw_errno("poll", errno);
    }
  };
  const std::string out = line + "\n";
  for (size_t sent = 0; sent < out.size();) {
    wait_for(POLLOUT);
    const ssize_t n = ::send(fd.get(), out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) throw Error("nothing answers at " + where + ": " + std::strerror(errno));
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd.get(), SHUT_WR);
  std::string answer;
  char buf[4096];
  for (;;) {
    wait_for(POLLIN);
    const ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) throw Error(where + ": " + std::strerror(errno));
    if (n == 0) return answer;
    answer.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace gdrproxy
