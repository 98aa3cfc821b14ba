// Passing one fd over a UNIX socket (SCM_RIGHTS): how a sandboxed child hands its seccomp
// listener to its supervisor. Header-only so the benchmark's raw supervisor uses the same code.
#pragma once

#include <sys/socket.h>

#include <cstring>
#include <string>
#include <string_view>

namespace gdrproxy::proxy {

// Sends `data` in one sendmsg, with `fd` attached (SCM_RIGHTS) unless it is negative.
inline bool send_with_fd(int sock, std::string_view data, int fd, int flags = 0) {
  iovec iov{const_cast<char*>(data.data()), data.size()};
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  if (fd >= 0) {
    m.msg_control = ctl;
    m.msg_controllen = sizeof ctl;
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  return ::sendmsg(sock, &m, flags) == static_cast<ssize_t>(data.size());
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
