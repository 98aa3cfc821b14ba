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
#include <utility>

#include "proxy/base/error.h"
#include "proxy/base/unique_fd.h"
#include "proxy/engine/fd_passing.h"

namespace gdrproxy::proxy {
namespace {

constexpr size_t kMaxPacket = 70 * 1024;
constexpr size_t kMaxKept = 65536;

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

bool send_packet(int s, const std::string& data, int fd) {
  return send_with_fd(s, data, fd, MSG_NOSIGNAL);
}

// One packet and its fd (-1 if none); false at EOF, on error or after `timeout_ms`.
bool recv_packet(int s, std::string& data, UniqueFd& fd, int timeout_ms) {
  fd.reset();
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
      UniqueFd received(f);
      if (!fd) fd = std::move(received);  // one fd per packet: the others are closed
    }
  }
  if (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
    fd.reset();
    return false;
  }
  data.assign(buf.data(), static_cast<size_t>(n));
  return true;
}

struct Kept {
  std::string id, json;
  UniqueFd fd;
};

// The holder: serves its socket until killed. Never returns.
[[noreturn]] void run_holder(int listen_fd) {
  std::vector<Kept> kept;
  for (;;) {
    const UniqueFd c(::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (!c) continue;
    ucred cred{};
    socklen_t len = sizeof cred;
    std::string data;
    UniqueFd fd;
    if (::getsockopt(c.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == 0 &&
        recv_packet(c.get(), data, fd, 2000)) {
      if (data.rfind("PUT\n", 0) == 0 && fd && kept.size() < kMaxKept) {
        const auto j = nlohmann::json::parse(data.substr(4), nullptr, false);
        std::string id;
        if (j.is_object() && j.contains("state") && j["state"].is_object() &&
            j["state"].contains("id") && j["state"]["id"].is_string())
          id = j["state"]["id"].get<std::string>();
        if (!id.empty()) kept.push_back({id, data.substr(4), std::move(fd)});
      } else if (data.rfind("DROP\n", 0) == 0) {
        const std::string id = data.substr(5);
        std::erase_if(kept, [&](const Kept& k) { return k.id == id; });  // closes their fds
      } else if (data == "GET\n") {
        for (const Kept& k : kept) send_packet(c.get(), k.json, k.fd.get());
      }
    }
  }
}

}  // namespace

FdStoreClient FdStoreClient::connect_or_start(const std::string& path) {
  if (connect_to(path)) return FdStoreClient(path);
  // Start a holder: bind here (so the socket exists when we return), then hand the listening
  // socket to a double-forked process that keeps no other fd of ours.
  ::unlink(path.c_str());
  const sockaddr_un a = address_of(path);
  UniqueFd l(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  const mode_t old = ::umask(0177);
  const bool bound = l && ::bind(l.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0 &&
                     ::listen(l.get(), 64) == 0;
  ::umask(old);
  if (!bound) throw_errno("cannot start the fd store at " + path, errno);
  const pid_t p = ::fork();
  if (p < 0) throw_errno("fork", errno);
  if (p == 0) {
    ::setsid();
    if (::fork() != 0) _exit(0);
    // Keep only the listening socket: an inherited listener copy would keep a container
    // attached for ever.
    if (::dup2(l.get(), 3) < 0) _exit(1);
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
  l.reset();
  int st;
  ::waitpid(p, &st, 0);
  return FdStoreClient(path);
}

std::vector<StoredListener> FdStoreClient::take_all() const {
  std::vector<StoredListener> out;
  const UniqueFd s = connect_to(path_);
  if (!s) return out;
  if (send_packet(s.get(), "GET\n", -1)) {
    std::string data;
    UniqueFd fd;
    while (recv_packet(s.get(), data, fd, 2000)) {
      if (fd) out.push_back({data, fd.release()});
    }
  }
  return out;
}

void FdStoreClient::put(const std::string& state_json, int listener_fd) const {
  const UniqueFd s = connect_to(path_);
  if (!s) return;
  send_packet(s.get(), "PUT\n" + state_json, listener_fd);
}

void FdStoreClient::drop(const std::string& container_id) const {
  const UniqueFd s = connect_to(path_);
  if (!s) return;
  send_packet(s.get(), "DROP\n" + container_id, -1);
}

}  // namespace gdrproxy::proxy
