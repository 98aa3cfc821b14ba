// Passing one fd over a UNIX socket (SCM_RIGHTS): how a sandboxed child hands its seccomp
// listener to its supervisor. Header-only so the benchmark's raw supervisor uses the same code.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace gdrproxy::proxy {

// The most fds one send_with_fds call attaches.
inline constexpr size_t kMaxFdsPerMessage = 8;

// Sends `data` in one sendmsg, with `fds` attached (one SCM_RIGHTS message; none when empty).
// False for more than kMaxFdsPerMessage fds.
inline bool send_with_fds(int sock, std::string_view data, std::span<const int> fds,
                          int flags = 0) {
  if (fds.size() > kMaxFdsPerMessage) return false;
  iovec iov{const_cast<char*>(data.data()), data.size()};
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)] = {};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  if (!fds.empty()) {
    m.msg_control = ctl;
    m.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  return ::sendmsg(sock, &m, flags) == static_cast<ssize_t>(data.size());
}

// Sends `data` in one sendmsg, with `fd` attached (SCM_RIGHTS) unless it is negative.
inline bool send_with_fd(int sock, std::string_view data, int fd, int flags = 0) {
  return send_with_fds(sock, data, fd >= 0 ? std::span<const int>(&fd, 1) : std::span<const int>(),
                       flags);
}

inline bool send_fd(int sock, int fd) {
  return send_with_fd(sock, "F", fd);
}

// Receives an fd, or (returning -1) the text the peer sent instead, e.g. why its setup failed.
inline int recv_fd(int sock, std::string& message) {
  char buf[512];
  iovec iov{buf, sizeof buf};
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof ctl;
  ssize_t n = ::recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
  if (n <= 0) {
    message = "peer closed the socket";
    return -1;
  }
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  if (c && c->cmsg_type == SCM_RIGHTS) {
    int fd;
    std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
  }
  message.assign(buf, static_cast<size_t>(n));
  return -1;
}

}  // namespace gdrproxy::proxy
