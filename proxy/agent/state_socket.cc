// See state_socket.h. Every fd received is owned by a UniqueFd from the moment recvmsg returns
// it, so an early return closes it; only success hands the fds on. Reads never block: recvmsg
// runs with MSG_DONTWAIT; the blocking form's poll() waits for at most what is left of the
// deadline.
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

#include "base/unique_fd.h"

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

StateReader::Step StateReader::read_available(int conn_fd, std::string& why) {
  if (conn_fd < 0) {
    why = "no connection (fd " + std::to_string(conn_fd) + ")";
    return Step::kFailed;
  }
  const auto failed = [&](std::string line) {
    why = std::move(line);
    fds_.clear();  // closes them
    return Step::kFailed;
  };
  if (leave_in_socket_ && !peek_offset_set_) {
    // From the first byte, whatever an earlier reader of this connection had peeked.
    int zero = 0;
    if (::setsockopt(conn_fd, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof zero) != 0)
      return failed(errno_text("setsockopt(SO_PEEK_OFF)", errno));
    peek_offset_set_ = true;
  }
  // Room for one byte past the limit, so that a larger state is seen as larger.
  if (chunk_.empty()) chunk_.resize(kMaxStateBytes + 1);
  for (;;) {
    iovec iov{chunk_.data(), kMaxStateBytes + 1 - json_.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(kMaxStateFds * sizeof(int))];
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    const ssize_t n =
        ::recvmsg(conn_fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT | (leave_in_socket_ ? MSG_PEEK : 0));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Step::kMore;
      return failed(errno_text("recvmsg", errno));
    }
    json_.append(chunk_.data(), static_cast<size_t>(n));

    ReceivedFds arrived;
    take_fds(m, arrived);
    // The kernel installed the fds that fit and closed the rest: refuse rather than guess.
    if (m.msg_flags & MSG_CTRUNC)
      return failed("more than " + std::to_string(kMaxStateFds) +
                    " fds (or other control data) arrived with the state: refused");
    if (!arrived.empty()) {
      if (fds_arrived_)
        return failed("fds arrived with a later message than the first that carried fds (" +
                      std::to_string(arrived.size()) + " more): refused");
      fds_ = std::move(arrived);
      fds_arrived_ = true;
    }
    if (json_.size() > kMaxStateBytes)
      return failed("the state is larger than " + std::to_string(kMaxStateBytes) +
                    " bytes: refused");
    // crun (1.8) keeps the connection open after sending the state: a complete JSON document
    // with its fds is the whole message, whether or not EOF follows.
    if (n > 0 && fds_arrived_ && nlohmann::json::accept(json_)) return Step::kDone;
    if (n == 0) {
      if (json_.empty()) return failed("the runtime closed the connection without sending a state");
      return Step::kDone;
    }
  }
}

ReceivedState StateReader::take() {
  ReceivedState out;
  out.json = std::move(json_);
  out.fds = release_all(fds_);
  json_.clear();
  fds_arrived_ = false;
  return out;
}

bool receive_container_state(int conn_fd, ReceivedState& out, std::string& why, int timeout_ms) {
  if (conn_fd < 0) {  // poll() would skip it and wait out the deadline
    why = "no connection (fd " + std::to_string(conn_fd) + ")";
    return false;
  }
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  StateReader reader;
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      why = "the runtime did not close the connection within " + std::to_string(timeout_ms) +
            " ms (" + std::to_string(reader.bytes()) + " bytes received)";
      return false;
    }
    pollfd p{conn_fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno != EINTR) {
      why = errno_text("poll", errno);
      return false;
    }
    if (ready <= 0) continue;  // interrupted or timed out: the deadline check decides
    switch (reader.read_available(conn_fd, why)) {
      case StateReader::Step::kMore:
        continue;
      case StateReader::Step::kFailed:
        return false;
      case StateReader::Step::kDone:
        out = reader.take();
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
