// The fd holder and its client (see fd_store.h). SOCK_SEQPACKET keeps each record one packet, so
// an entry's fds always arrive with its own state. The holder is a double-forked process of the
// agent's binary that keeps nothing but its socket and its entries; one epoll set tells it of a
// request, of a kept process's exit (its pidfd readable) and of a kept listener's hang-up.
#include "proxy/agent/fd_store.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
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
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <stdexcept>
#include <utility>

#include "base/error.h"
#include "base/unique_fd.h"
#include "proxy/agent/fd_store_lock.h"
#include "proxy/agent/fd_store_records.h"
#include "proxy/engine/fd_passing.h"

namespace gdrproxy::proxy {
namespace {

constexpr size_t kMaxPacket = 70 * 1024;
constexpr size_t kMaxKept = 65536;
// Connections are kept only from accept to the end of their read (a handshake deadline), so only
// agents killed again and again in that window leave many; beyond this they go unprotected.
constexpr size_t kMaxConns = 1024;
constexpr size_t kFdsPerEntry = 3;  // listener, pidfd, received-id page
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
bool send_packet(int s, const std::string& data, std::array<int, kFdsPerEntry> fds = {-1, -1, -1}) {
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

struct Kept {
  std::string json;
  std::array<UniqueFd, kFdsPerEntry> fds;  // listener, pidfd, received-id page
};

// The holder: serves its socket, watches its entries and, while an agent subscribes, accepts
// runtimes on the agent's runtime socket for it; until killed. An epoll event's data is a tag
// below for the sockets, else an entry's key (keys count up from 1).
class Holder {
 public:
  explicit Holder(int listen_fd) : listen_fd_(listen_fd), ep_(::epoll_create1(EPOLL_CLOEXEC)) {
    if (!ep_ || !watch(listen_fd_, EPOLLIN, kTagRequests)) _exit(1);
  }

  [[noreturn]] void run() {
    for (;;) {
      epoll_event events[64];
      const int n = ::epoll_wait(ep_.get(), events, 64, -1);
      for (int e = 0; e < n; ++e) {
        const uint64_t tag = events[e].data.u64;
        if (tag == kTagRequests)
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

// Starts a holder at `path`: binds here (so the socket exists when we return), then hands the
// listening socket to a double-forked process that keeps no other fd of ours.
void start_holder(const std::string& path) {
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
    // Three fds an entry: as many as the hard limit allows.
    rlimit r{};
    if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
      r.rlim_cur = r.rlim_max;
      ::setrlimit(RLIMIT_NOFILE, &r);
    }
    Holder(3).run();
  }
  l.reset();
  int st;
  ::waitpid(p, &st, 0);
}

}  // namespace

FdStoreClient FdStoreClient::connect_or_start(const std::string& path) {
  UniqueFd lock = lock_fd_store(path);
  if (connect_to(path)) return FdStoreClient(path, false, std::move(lock));
  start_holder(path);
  return FdStoreClient(path, true, std::move(lock));
}

UniqueFd FdStoreClient::take_runtime_socket(const std::string& path) {
  std::string data;
  std::array<UniqueFd, kFdsPerEntry> fds;
  if (!ask(path_, socket_query(), {-1, -1, -1}, data, fds))
    return UniqueFd();  // a holder of an older build answers nothing
  names_entries_ = true;
  const HolderRequest r = parse_holder_request(data);
  if (r.kind != HolderRequest::Kind::kSocket || !fds[0] || !is_listening_stream(fds[0]) ||
      name_of(path) != r.socket)
    return UniqueFd();  // none kept, or its path was removed or bound again since
  socket_copy_.reset(::fcntl(fds[0].get(), F_DUPFD_CLOEXEC, 0));
  socket_name_ = r.socket;
  return std::move(fds[0]);
}

void FdStoreClient::keep_runtime_socket(int fd, const std::string& path) {
  const auto name = name_of(path);
  if (!name) return;
  socket_copy_.reset(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  socket_name_ = *name;
  put_runtime_socket();
}

void FdStoreClient::put_runtime_socket() const {
  if (!socket_copy_) return;
  const UniqueFd s = connect_to(path_);
  if (s) send_packet(s.get(), socket_request(socket_name_), {socket_copy_.get(), -1, -1});
}

namespace {

// Sends `request` with `fds` and reads the key the holder answers with; nullopt when none
// answered.
std::optional<uint64_t> request_key(const std::string& path, const std::string& request,
                                    const std::array<int, kFdsPerEntry>& fds) {
  std::string data;
  std::array<UniqueFd, kFdsPerEntry> none;
  if (!ask(path, request, fds, data, none)) return std::nullopt;
  return parse_put_answer(data);
}

}  // namespace

std::optional<uint64_t> FdStoreClient::put(const std::string& state_json,
                                           const std::array<int, 3>& fds, uint64_t replaces) const {
  return request_key(path_, put_request(state_json, replaces), fds);
}

std::optional<Subscription> FdStoreClient::subscribe() const {
  std::string data;
  std::array<UniqueFd, kFdsPerEntry> none;
  UniqueFd s = ask(path_, subscribe_request(), {-1, -1, -1}, data, none);
  if (!s) return std::nullopt;
  const auto kept = parse_serving_answer(data);
  if (!kept) return std::nullopt;
  return Subscription{std::move(s), *kept};
}

std::optional<StoredConnection> FdStoreClient::next_connection(int subscription, bool& ended) {
  ended = false;
  pollfd p{subscription, POLLIN, 0};
  if (::poll(&p, 1, 0) != 1) return std::nullopt;
  std::string data;
  std::array<UniqueFd, kFdsPerEntry> fds;
  // Readable and no packet: the holder closed it.
  if (!recv_packet(subscription, data, fds, 0)) {
    ended = true;
    return std::nullopt;
  }
  const HolderEntry e = parse_holder_entry(data);
  if (!e.connection || !fds[0]) return std::nullopt;
  return StoredConnection{*e.key, std::move(fds[0])};
}

std::optional<uint64_t> FdStoreClient::keep_connection(int conn) const {
  return request_key(path_, conn_request(), {conn, -1, -1});
}

std::vector<StoredListener> FdStoreClient::take_all() const {
  std::vector<StoredListener> out;
  const UniqueFd s = connect_to(path_);
  if (!s) return out;
  if (send_packet(s.get(), get_request())) {
    std::string data;
    std::array<UniqueFd, kFdsPerEntry> fds;
    while (recv_packet(s.get(), data, fds, 2000)) {
      if (!fds[0]) continue;
      HolderEntry e = parse_holder_entry(data);  // from an older holder: no key, pidfd or page
      if (e.connection) continue;
      StoredListener l;
      l.key = e.key.value_or(0);
      l.state_json = std::move(e.state_json);
      l.listener = std::move(fds[0]);
      l.pidfd = std::move(fds[1]);
      l.ids = std::move(fds[2]);
      out.push_back(std::move(l));
    }
  }
  return out;
}

bool FdStoreClient::keep(const std::string& id, const std::string& state_json,
                         std::array<UniqueFd, 3> fds, bool in_holder) {
  forget_exited();
  bool answered = true;
  if (!in_holder) {
    const UniqueFd s = connect_to(path_);
    answered = s && send_packet(s.get(), put_request(state_json),
                                {fds[0].get(), fds[1].get(), fds[2].get()});
    // The holder answers with the entry's key; not waited for: this entry is never forgotten
    // by key (its process's exit drops it).
  }
  copies_.push_back(Copy{id, state_json, std::move(fds)});
  return answered;
}

void FdStoreClient::forget_copies_of(const std::string& id) {
  std::erase_if(copies_, [&id](const Copy& c) { return c.id == id; });
}

// A process's pidfd is readable once it has exited.
void FdStoreClient::forget_exited() {
  std::vector<pollfd> p;
  p.reserve(copies_.size());
  for (const Copy& c : copies_) p.push_back(pollfd{c.fds[1].get(), POLLIN, 0});
  if (p.empty() || ::poll(p.data(), p.size(), 0) <= 0) return;
  std::vector<Copy> live;
  live.reserve(copies_.size());
  for (size_t i = 0; i < copies_.size(); ++i)
    if (p[i].revents == 0) live.push_back(std::move(copies_[i]));
  copies_ = std::move(live);
}

std::optional<size_t> FdStoreClient::replace_holder_if_gone() {
  // A connection closed at once: the holder reads its end and goes on.
  if (connect_to(path_)) return std::nullopt;
  forget_exited();
  start_holder(path_);
  names_entries_ = true;
  // The runtime socket first: runtimes that connect meanwhile wait in its backlog again.
  put_runtime_socket();
  size_t n = 0;
  for (const Copy& c : copies_) {
    const UniqueFd s = connect_to(path_);
    if (s && send_packet(s.get(), put_request(c.state_json),
                         {c.fds[0].get(), c.fds[1].get(), c.fds[2].get()}))
      ++n;
  }
  return n;
}

void FdStoreClient::forget(uint64_t key) const {
  const UniqueFd s = connect_to(path_);
  if (!s) return;
  send_packet(s.get(), forget_request(key));
}

void FdStoreClient::forget_container_in_older_holder(const std::string& id) const {
  const UniqueFd s = connect_to(path_);
  if (!s) return;
  send_packet(s.get(), "DROP\n" + id);
}

}  // namespace gdrproxy::proxy
