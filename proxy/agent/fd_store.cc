// The fd holder and its client (see fd_store.h). SOCK_SEQPACKET keeps each record one packet, so
// a listener always arrives with its own state. The holder is a double-forked process of the
// agent's binary that keeps nothing but its socket and the listeners it is given.
#include "proxy/agent/fd_store.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "proxy/engine/fd_passing.h"

namespace gdrproxy::proxy {
namespace {

constexpr size_t kMaxPacket = 70 * 1024;
constexpr size_t kMaxKept = 65536;

sockaddr_un address_of(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path) throw std::runtime_error("fd store path too long: " + path);
  std::memcpy(a.sun_path, path.c_str(), path.size());
  return a;
}

int connect_to(const std::string& path) {
  const sockaddr_un a = address_of(path);
  const int s = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  if (::connect(s, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    ::close(s);
    return -1;
  }
  return s;
}

bool send_packet(int s, const std::string& data, int fd) {
  return send_with_fd(s, data, fd, MSG_NOSIGNAL);
}

// One packet and its fd (-1 if none); false at EOF, on error or after `timeout_ms`.
bool recv_packet(int s, std::string& data, int& fd, int timeout_ms) {
  fd = -1;
  pollfd p{s, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) != 1) return false;
  std::vector<char> buf(kMaxPacket);
  iovec iov{buf.data(), buf.size()};
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * 4)] = {};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof ctl;
  const ssize_t n = ::recvmsg(s, &m, MSG_CMSG_CLOEXEC);
  if (n <= 0) return false;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int f;
      std::memcpy(&f, CMSG_DATA(c) + i * sizeof f, sizeof f);
      if (fd < 0)
        fd = f;
      else
        ::close(f);  // one fd per packet
    }
  }
  if (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
    if (fd >= 0) ::close(fd);
    fd = -1;
    return false;
  }
  data.assign(buf.data(), static_cast<size_t>(n));
  return true;
}

struct Kept {
  std::string id, json;
  int fd;
};

// The holder: serves its socket until killed. Never returns.
[[noreturn]] void run_holder(int listen_fd) {
  std::vector<Kept> kept;
  for (;;) {
    const int c = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    ucred cred{};
    socklen_t len = sizeof cred;
    std::string data;
    int fd = -1;
    if (::getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == 0 &&
        recv_packet(c, data, fd, 2000)) {
      if (data.rfind("PUT\n", 0) == 0 && fd >= 0 && kept.size() < kMaxKept) {
        const auto j = nlohmann::json::parse(data.substr(4), nullptr, false);
        std::string id;
        if (j.is_object() && j.contains("state") && j["state"].is_object() &&
            j["state"].contains("id") && j["state"]["id"].is_string())
          id = j["state"]["id"].get<std::string>();
        if (!id.empty()) {
          kept.push_back({id, data.substr(4), fd});
          fd = -1;
        }
      } else if (data.rfind("DROP\n", 0) == 0) {
        const std::string id = data.substr(5);
        std::erase_if(kept, [&](const Kept& k) {
          if (k.id != id) return false;
          ::close(k.fd);
          return true;
        });
      } else if (data == "GET\n") {
        for (const Kept& k : kept) send_packet(c, k.json, k.fd);
      }
      if (fd >= 0) ::close(fd);
    }
    ::close(c);
  }
}

}  // namespace

FdStoreClient FdStoreClient::connect_or_start(const std::string& path) {
  if (const int s = connect_to(path); s >= 0) {
    ::close(s);
    return FdStoreClient(path);
  }
  // Start a holder: bind here (so the socket exists when we return), then hand the listening
  // socket to a double-forked process that keeps no other fd of ours.
  ::unlink(path.c_str());
  const sockaddr_un a = address_of(path);
  const int l = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  const mode_t old = ::umask(0177);
  const bool bound = l >= 0 && ::bind(l, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0 &&
                     ::listen(l, 64) == 0;
  ::umask(old);
  if (!bound) {
    const int e = errno;
    if (l >= 0) ::close(l);
    throw std::runtime_error("cannot start the fd store at " + path + ": " + std::strerror(e));
  }
  const pid_t p = ::fork();
  if (p < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (p == 0) {
    ::setsid();
    if (::fork() != 0) _exit(0);
    // Keep only the listening socket: an inherited listener copy would keep a container
    // attached for ever.
    if (::dup2(l, 3) < 0) _exit(1);
    ::syscall(SYS_close_range, 4u, ~0u, 0u);
    const int dn = ::open("/dev/null", O_RDWR);
    if (dn >= 0) {
      ::dup2(dn, 0);
      ::dup2(dn, 1);
      ::dup2(dn, 2);
      if (dn > 3) ::close(dn);
    }
    ::signal(SIGPIPE, SIG_IGN);
    run_holder(3);
  }
  ::close(l);
  int st;
  ::waitpid(p, &st, 0);
  return FdStoreClient(path);
}

std::vector<StoredListener> FdStoreClient::take_all() const {
  std::vector<StoredListener> out;
  const int s = connect_to(path_);
  if (s < 0) return out;
  if (send_packet(s, "GET\n", -1)) {
    std::string data;
    int fd;
    while (recv_packet(s, data, fd, 2000)) {
      if (fd >= 0) out.push_back({data, fd});
    }
  }
  ::close(s);
  return out;
}

void FdStoreClient::put(const std::string& state_json, int listener_fd) const {
  const int s = connect_to(path_);
  if (s < 0) return;
  send_packet(s, "PUT\n" + state_json, listener_fd);
  ::close(s);
}

void FdStoreClient::drop(const std::string& container_id) const {
  const int s = connect_to(path_);
  if (s < 0) return;
  send_packet(s, "DROP\n" + container_id, -1);
  ::close(s);
}

}  // namespace gdrproxy::proxy
