// The holder's one epoll set tells it of a request, of a kept process's exit (its pidfd
// readable), of a kept listener's hang-up and, in the foreground, of SIGTERM or SIGINT;
// SOCK_SEQPACKET keeps each record one packet.
#include "proxy/agent/fd_store_holder.h"

#include <fcntl.h>
#include <linux/kcmp.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <stdexcept>
#include <utility>
#include "base/error.h"
#include "base/unique_fd.h"
#include "proxy/agent/fd_store.h"
#include "proxy/agent/fd_store_lock.h"
#include "proxy/agent/fd_store_records.h"
#include "proxy/agent/fd_store_wire.h"
#include "proxy/engine/fd_passing.h"

namespace gdrproxy::proxy {
namespace {

using namespace fd_wire;

constexpr size_t kMaxKept = 65536;
// Connections are kept only from accept to the end of their read (a handshake deadline), so only
// agents killed again and again in that window leave many; beyond this they go unprotected.
constexpr size_t kMaxConns = 1024;

struct Kept {
  std::string json;
  std::array<UniqueFd, kFdsPerEntry> fds;  // listener, pidfd, received-id page
};

// The holder: serves its socket, watches its entries and, while an agent subscribes, accepts
// runtimes on the agent's runtime socket for it; until killed, or until `stop_fd` (a signalfd,
// -1 for none) is readable. An epoll event's data is a tag below for the sockets, else an entry's
// key (keys count up from 1).
class Holder {
 public:
  Holder(int listen_fd, int stop_fd) : listen_fd_(listen_fd), ep_(::epoll_create1(EPOLL_CLOEXEC)) {
    if (!ep_ || !watch(listen_fd_, EPOLLIN, kTagRequests) ||
        (stop_fd >= 0 && !watch(stop_fd, EPOLLIN, kTagStop)))
      _exit(1);
  }

  // Until stop_fd is readable; the number of listener entries then held.
  size_t run() {
    for (;;) {
      epoll_event events[64];
      const int n = ::epoll_wait(ep_.get(), events, 64, -1);
      for (int e = 0; e < n; ++e) {
        const uint64_t tag = events[e].data.u64;
        if (tag == kTagStop)
          return kept_.size();
        else if (tag == kTagRequests)
          serve_request();
        else if (tag == kTagRuntimes)
          accept_runtime();
        else if (tag == kTagSubscriber)
          subscriber_event(events[e].events);
        else if (const auto it = kept_.find(tag); it != kept_.end())
          erase(it);  // its process exited (the pidfd is readable) or its filter is unused
      }
    }
  }

 private:
  static constexpr uint64_t kTagRequests = 0;
  static constexpr uint64_t kTagRuntimes = ~uint64_t{0};
  static constexpr uint64_t kTagSubscriber = ~uint64_t{0} - 1;
  static constexpr uint64_t kTagStop = ~uint64_t{0} - 2;

  bool watch(int fd, uint32_t events, uint64_t tag, int op = EPOLL_CTL_ADD) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    return ::epoll_ctl(ep_.get(), op, fd, &ev) == 0;
  }
  // The agent holds the same open files: each is taken out of the set by hand, since closing our
  // copy does not.
  void erase(std::map<uint64_t, Kept>::iterator it) {
    for (int i = 0; i < 2; ++i)
      ::epoll_ctl(ep_.get(), EPOLL_CTL_DEL, it->second.fds[i].get(), nullptr);
    kept_.erase(it);  // closes its fds
  }
  uint64_t keep_connection(UniqueFd conn) {
    const uint64_t key = next_key_++;
    conns_.emplace(key, std::move(conn));
    return key;
  }
  void drop_connection(uint64_t key) {
    if (conns_.erase(key) == 0) return;
    std::erase(undelivered_, key);
    update_accepting();
  }

  void serve_request() {
    UniqueFd c(::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC));
    if (!c) return;
    ucred cred{};
    socklen_t len = sizeof cred;
    std::string data;
    std::array<UniqueFd, kFdsPerEntry> fds;
    if (::getsockopt(c.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != 0 ||
        !recv_packet(c.get(), data, fds, 2000))
      return;
    HolderRequest r = parse_holder_request(data);
    switch (r.kind) {
      case HolderRequest::Kind::kPut:
        if (fds[2] && kept_.size() < kMaxKept) put(c.get(), std::move(r), std::move(fds));
        break;
      case HolderRequest::Kind::kConn:
        if (fds[0] && conns_.size() < kMaxConns)
          send_packet(c.get(), put_answer(keep_connection(std::move(fds[0]))));
        break;
      case HolderRequest::Kind::kSubscribe:
        subscribe(std::move(c));
        break;
      case HolderRequest::Kind::kSocket:
        if (fds[0] && is_listening_stream(fds[0])) {
          if (accepting_) ::epoll_ctl(ep_.get(), EPOLL_CTL_DEL, runtime_socket_.get(), nullptr);
          accepting_ = false;
          runtime_socket_ = std::move(fds[0]);
          runtime_name_ = r.socket;
          // Accepted without waiting (the agent's copy shares this open file).
          const int fl = ::fcntl(runtime_socket_.get(), F_GETFL);
          if (fl >= 0) ::fcntl(runtime_socket_.get(), F_SETFL, fl | O_NONBLOCK);
          update_accepting();
        }
        break;
      case HolderRequest::Kind::kSocketQuery:
        if (runtime_socket_)
          send_packet(c.get(), socket_request(runtime_name_), {runtime_socket_.get(), -1, -1});
        else
          send_packet(c.get(), no_socket_answer());
        break;
      case HolderRequest::Kind::kForget:
        if (const auto it = kept_.find(r.key); it != kept_.end()) erase(it);
        drop_connection(r.key);
        break;
      case HolderRequest::Kind::kGet:
        for (const auto& [key, k] : kept_)
          send_packet(c.get(), holder_entry(key, k.json),
                      {k.fds[0].get(), k.fds[1].get(), k.fds[2].get()});
        break;
      case HolderRequest::Kind::kNone:
        break;
    }
  }

  void put(int c, HolderRequest r, std::array<UniqueFd, kFdsPerEntry> fds) {
    // A listener kept already (a PUT answered too late for its client, which put it again):
    // the entry it has, not a second one that the next agent would adopt twice.
    if (const uint64_t kept = key_of_listener(fds[0].get())) {
      if (r.key != 0) drop_connection(r.key);
      send_packet(c, put_answer(kept));
      return;
    }
    const uint64_t key = next_key_++;
    // The listener: a hang-up is reported whatever is asked; the pidfd: readable once its
    // process has exited.
    if (!watch(fds[0].get(), 0, key)) return;
    if (!watch(fds[1].get(), EPOLLIN, key)) {
      ::epoll_ctl(ep_.get(), EPOLL_CTL_DEL, fds[0].get(), nullptr);
      return;
    }
    // Its state was read from a kept connection: that one goes as the entry comes.
    if (r.key != 0) drop_connection(r.key);
    kept_.emplace(key, Kept{std::move(r.state_json), std::move(fds)});
    send_packet(c, put_answer(key));
  }

  // The key of the entry whose listener is the same open file as `fd`, 0 when none (or on a
  // kernel without kcmp, where each PUT is taken as a new entry).
  uint64_t key_of_listener(int fd) const {
    const pid_t self = ::getpid();
    for (const auto& [key, k] : kept_)
      if (::syscall(SYS_kcmp, self, self, KCMP_FILE, k.fds[0].get(), fd) == 0) return key;
    return 0;
  }

  // The agent that subscribes gets every connection kept (those accepted for an agent that died
  // before it had read them, first), then each one as it is accepted. A new subscriber replaces
  // the old (an agent killed, its successor started).
  void subscribe(UniqueFd c) {
    end_subscription();
    if (!send_packet(c.get(), serving_answer(conns_.size()))) return;
    if (!watch(c.get(), EPOLLIN | EPOLLRDHUP, kTagSubscriber)) return;
    subscriber_ = std::move(c);
    deliver();
    update_accepting();
  }
  void end_subscription() {
    if (subscriber_) ::epoll_ctl(ep_.get(), EPOLL_CTL_DEL, subscriber_.get(), nullptr);
    subscriber_.reset();
    waiting_to_send_ = false;
    // The next subscriber gets them all: the last one may not have read them.
    undelivered_.clear();
    for (const auto& [key, conn] : conns_) undelivered_.push_back(key);
    update_accepting();
  }
  void subscriber_event(uint32_t events) {
    // The agent never writes on it: anything readable is its end.
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
      end_subscription();
      return;
    }
    deliver();
    update_accepting();
  }
  // Sends what the subscriber has not been sent, without waiting: when its socket is full, goes
  // on once it is writable again (accepting meanwhile stops, so nothing piles up here).
  void deliver() {
    while (subscriber_ && !undelivered_.empty()) {
      const uint64_t key = undelivered_.front();
      const auto it = conns_.find(key);
      if (it != conns_.end()) {
        if (!send_with_fd(subscriber_.get(), holder_conn_entry(key), it->second.get(),
                          MSG_NOSIGNAL | MSG_DONTWAIT)) {
          if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (!waiting_to_send_)
              watch(subscriber_.get(), EPOLLIN | EPOLLRDHUP | EPOLLOUT, kTagSubscriber,
                    EPOLL_CTL_MOD);
            waiting_to_send_ = true;
          } else {
            end_subscription();
          }
          return;
        }
      }
      undelivered_.pop_front();
    }
    if (subscriber_ && waiting_to_send_) {
      watch(subscriber_.get(), EPOLLIN | EPOLLRDHUP, kTagSubscriber, EPOLL_CTL_MOD);
      waiting_to_send_ = false;
    }
  }
  // Runtimes are accepted here only for a subscriber that has taken all it was sent, and within
  // the cap; otherwise they wait in the socket's backlog.
  void update_accepting() {
    const bool want =
        runtime_socket_ && subscriber_ && undelivered_.empty() && conns_.size() < kMaxConns;
    if (want == accepting_) return;
    if (want ? watch(runtime_socket_.get(), EPOLLIN, kTagRuntimes)
             : ::epoll_ctl(ep_.get(), EPOLL_CTL_DEL, runtime_socket_.get(), nullptr) == 0)
      accepting_ = want;
  }
  // A runtime's connection: kept here from its accept, so that no agent ever holds one the
  // holder lacks, and sent to the subscriber.
  void accept_runtime() {
    UniqueFd conn(::accept4(runtime_socket_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn) return;
    undelivered_.push_back(keep_connection(std::move(conn)));
    deliver();
    update_accepting();
  }

  const int listen_fd_;
  const UniqueFd ep_;
  std::map<uint64_t, Kept> kept_;
  // Runtimes' connections whose state no agent has read whole yet (the agent peeks, so the
  // bytes and the listener stay in them): not watched, since a runtime hangs up as soon as it
  // has sent; each leaves by the PUT of its state, a FORGET, or the cap.
  std::map<uint64_t, UniqueFd> conns_;
  std::deque<uint64_t> undelivered_;  // connections the subscriber has not been sent
  uint64_t next_key_ = 1;
  // The agent's runtime socket, kept listening, and the file its path named when it was bound.
  UniqueFd runtime_socket_;
  SocketName runtime_name_;
  UniqueFd subscriber_;  // the agent's subscription: it is sent the connections
  bool accepting_ = false;
  bool waiting_to_send_ = false;
};

// The holder's socket at `path`, bound and listening (a stale file there is replaced), mode 0600.
UniqueFd bind_holder_socket(const std::string& path) {
  ::unlink(path.c_str());
  const sockaddr_un a = address_of(path);
  UniqueFd l(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  const mode_t old = ::umask(0177);
  const bool bound = l && ::bind(l.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0 &&
                     ::listen(l.get(), 64) == 0;
  ::umask(old);
  if (!bound) throw_errno("cannot start the fd store at " + path, errno);
  return l;
}

// Three fds an entry: as many as the hard limit allows.
void raise_fd_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
}

}  // namespace

bool holder_answers(const std::string& path) {
  return static_cast<bool>(connect_to(path));
}

// Starts a holder at `path`: binds here (so the socket exists when we return), then hands the
// listening socket to a double-forked process that keeps no other fd of ours.
void start_holder(const std::string& path) {
  UniqueFd l = bind_holder_socket(path);
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
    raise_fd_limit();
    Holder(3, -1).run();
    _exit(0);
  }
  l.reset();
  int st;
  ::waitpid(p, &st, 0);
}

int run_holder(const std::string& path) {
  if (holder_answers(path))
    throw Error("a holder already answers at " + path +
                ": one holder per path (stop that one, or give this one another path)");
  sigset_t stop;
  ::sigemptyset(&stop);
  ::sigaddset(&stop, SIGTERM);
  ::sigaddset(&stop, SIGINT);
  if (::sigprocmask(SIG_BLOCK, &stop, nullptr) != 0) throw_errno("sigprocmask", errno);
  const UniqueFd signals(::signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals) throw_errno("signalfd", errno);
  const UniqueFd l = bind_holder_socket(path);
  const auto name = name_of(path);
  ::signal(SIGPIPE, SIG_IGN);
  raise_fd_limit();
  std::cerr << "gdrproxy agent fd-store: holding containers' listeners at " << path
            << " (SIGTERM drops them)" << std::endl;
  const size_t held = Holder(l.get(), signals.get()).run();
  // The path goes with us, unless another holder has bound it since.
  if (name && name_of(path) == name) ::unlink(path.c_str());
  std::cerr << "gdrproxy agent fd-store: stopped; the " << held
            << " listener(s) it held are dropped: a running agent serves on and puts them in the "
               "next holder, but with no agent running their containers' trapped calls fail with "
               "ENOSYS"
            << std::endl;
  return 0;
}

}  // namespace gdrproxy::proxy
