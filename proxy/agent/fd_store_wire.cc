#include "proxy/agent/fd_store_wire.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstring>
#include <span>
#include <vector>

#include "base/error.h"
#include "proxy/engine/fd_passing.h"

namespace gdrproxy::proxy::fd_wire {

static_assert(kFdsPerEntry <= kMaxFdsPerMessage);

sockaddr_un address_of(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path) throw Error("fd store path too long: " + path);
  std::memcpy(a.sun_path, path.c_str(), path.size());
  return a;
}

UniqueFd connect_to(const std::string& path) {
  const sockaddr_un a = address_of(path);
  UniqueFd s(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!s) return s;
  if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) s.reset();
  return s;
}

// One packet with up to kFdsPerEntry fds (none where negative, and none after one).
bool send_packet(int s, const std::string& data, std::array<int, kFdsPerEntry> fds) {
  size_t n = 0;
  while (n < kFdsPerEntry && fds[n] >= 0) ++n;
  return send_with_fds(s, data, std::span<const int>(fds.data(), n), MSG_NOSIGNAL);
}

// One packet and its fds (in order; the others empty); false at EOF, on error or after
// `timeout_ms`.
bool recv_packet(int s, std::string& data, std::array<UniqueFd, kFdsPerEntry>& fds,
                 int timeout_ms) {
  for (UniqueFd& f : fds) f.reset();
  pollfd p{s, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) != 1) return false;
  std::vector<char> buf(kMaxPacket);
  iovec iov{buf.data(), buf.size()};
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * (kFdsPerEntry + 4))] = {};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof ctl;
  const ssize_t n = ::recvmsg(s, &m, MSG_CMSG_CLOEXEC);
  if (n <= 0) return false;
  size_t got = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int f;
      std::memcpy(&f, CMSG_DATA(c) + i * sizeof f, sizeof f);
      UniqueFd received(f);
      if (got < kFdsPerEntry) fds[got++] = std::move(received);  // more are closed
    }
  }
  if (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
    for (UniqueFd& f : fds) f.reset();
    return false;
  }
  data.assign(buf.data(), static_cast<size_t>(n));
  return true;
}

// One request to the holder at `path` with `fds`, and its answer (with the fds that came with it)
// within 2 s: the connection, still open (a subscription reads on), or empty when no holder
// answered (none runs; an older one closes the connection on a request it does not know).
UniqueFd ask(const std::string& path, const std::string& request,
             const std::array<int, kFdsPerEntry>& fds, std::string& answer,
             std::array<UniqueFd, kFdsPerEntry>& answer_fds) {
  UniqueFd s = connect_to(path);
  if (!s || !send_packet(s.get(), request, fds) || !recv_packet(s.get(), answer, answer_fds, 2000))
    s.reset();
  return s;
}

// A listening AF_UNIX stream socket (what the agent's runtime socket is).
bool is_listening_stream(const UniqueFd& fd) {
  int v = 0;
  socklen_t len = sizeof v;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_ACCEPTCONN, &v, &len) != 0 || v != 1) return false;
  len = sizeof v;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_TYPE, &v, &len) != 0 || v != SOCK_STREAM) return false;
  len = sizeof v;
  return ::getsockopt(fd.get(), SOL_SOCKET, SO_DOMAIN, &v, &len) == 0 && v == AF_UNIX;
}

// The file `path` names now; nullopt when it names none.
std::optional<SocketName> name_of(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return SocketName{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

}  // namespace gdrproxy::proxy::fd_wire
