// See state_socket.h. Every fd received is owned by a UniqueFd from the moment recvmsg returns
// it, so an early return closes it; only success hands the fds on. Reads never block: poll()
// waits for at most what is left of the deadline, recvmsg runs with MSG_DONTWAIT.
#include "proxy/agent/state_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include <nlohmann/json.hpp>

#include "proxy/base/unique_fd.h"

namespace gdrproxy::proxy {
namespace {

// fds received and not yet handed to the caller: closed when this goes out of scope.
using ReceivedFds = std::vector<UniqueFd>;

// Hands the fds on: the caller owns them now.
std::vector<int> release_all(ReceivedFds& fds) {
  std::vector<int> out;
  out.reserve(fds.size());
  for (UniqueFd& fd : fds) out.push_back(fd.release());
  fds.clear();
  return out;
}

// Appends the fds of every SCM_RIGHTS message in `m`'s control data.
void take_fds(msghdr& m, ReceivedFds& into) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const unsigned char* data = CMSG_DATA(c);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, data + i * sizeof fd, sizeof fd);
      into.emplace_back(fd);
    }
  }
}

std::string errno_text(const char* call, int err) {
  return std::string(call) + ": " + std::strerror(err);
}

}  // namespace

bool receive_container_state(int conn_fd, ReceivedState& out, std::string& why, int timeout_ms) {
  if (conn_fd < 0) {  // poll() would skip it and wait out the deadline
    why = "no connection (fd " + std::to_string(conn_fd) + ")";
    return false;
  }
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string json;
  ReceivedFds fds;
  bool fds_arrived = false;
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      why = "the runtime did not close the connection within " + std::to_string(timeout_ms) +
            " ms (" + std::to_string(json.size()) + " bytes received)";
      return false;
    }
    pollfd p{conn_fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno != EINTR) {
      why = errno_text("poll", errno);
      return false;
    }
    if (ready <= 0) continue;  // interrupted or timed out: the deadline check decides

    // Room for one byte past the limit, so that a larger state is seen as larger.
    char chunk[16 * 1024];
    iovec iov{chunk, std::min(sizeof chunk, kMaxStateBytes + 1 - json.size())};
    alignas(cmsghdr) char control[CMSG_SPACE(kMaxStateFds * sizeof(int))];
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(conn_fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      why = errno_text("recvmsg", errno);
      return false;
    }
    json.append(chunk, static_cast<size_t>(n));

    ReceivedFds arrived;
    take_fds(m, arrived);
    // The kernel installed the fds that fit and closed the rest: refuse rather than guess.
    if (m.msg_flags & MSG_CTRUNC) {
      why = "more than " + std::to_string(kMaxStateFds) +
            " fds (or other control data) arrived with the state: refused";
      return false;
    }
    if (!arrived.empty()) {
      if (fds_arrived) {
        why = "fds arrived with a later message than the first that carried fds (" +
              std::to_string(arrived.size()) + " more): refused";
        return false;
      }
      fds = std::move(arrived);
      fds_arrived = true;
    }
    if (json.size() > kMaxStateBytes) {
      why = "the state is larger than " + std::to_string(kMaxStateBytes) + " bytes: refused";
      return false;
    }
    // crun (1.8) keeps the connection open after sending the state: a complete JSON document
    // with its fds is the whole message, whether or not EOF follows.
    if (n > 0 && fds_arrived && nlohmann::json::accept(json)) {
      out.json = std::move(json);
      out.fds = release_all(fds);
      return true;
    }
    if (n == 0) {
      if (json.empty()) {
        why = "the runtime closed the connection without sending a state";
        return false;
      }
      out.json = std::move(json);
      out.fds = release_all(fds);
      return true;
    }
  }
}

std::optional<ucred> peer_credentials(int conn_fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(conn_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred)
    return std::nullopt;
  return cred;
}

}  // namespace gdrproxy::proxy
