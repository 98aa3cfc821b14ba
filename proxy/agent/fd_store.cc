// The fd store's client, the agent's side (fd_store.h): it puts and forgets entries, takes them
// all back at start, and keeps its own copies so that a holder killed while the agent runs is
// replaced with every live entry (the holder itself: fd_store_holder.h; the wire: fd_store_wire.h).
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
#include "proxy/agent/fd_store_holder.h"
#include "proxy/agent/fd_store_lock.h"
#include "proxy/agent/fd_store_records.h"
#include "proxy/agent/fd_store_wire.h"
#include "proxy/engine/fd_passing.h"

namespace gdrproxy::proxy {

using namespace fd_wire;

FdStoreClient::FdStoreClient(std::string path, bool names_entries, UniqueFd lock, bool external)
    : path_(std::move(path)),
      names_entries_(names_entries),
      lock_(std::move(lock)),
      external_(external),
      holder_name_(name_of(path_)) {}

FdStoreClient FdStoreClient::connect_or_start(const std::string& path) {
  UniqueFd lock = lock_fd_store(path);
  if (holder_answers(path)) return FdStoreClient(path, false, std::move(lock), false);
  start_holder(path);
  return FdStoreClient(path, true, std::move(lock), false);
}

FdStoreClient FdStoreClient::connect_external(const std::string& path,
                                              std::chrono::milliseconds wait) {
  UniqueFd lock = lock_fd_store(path);
  const auto until = std::chrono::steady_clock::now() + wait;
  while (!holder_answers(path)) {
    if (std::chrono::steady_clock::now() >= until)
      throw Error("no fd-store holder answers at " + path + " after " +
                  std::to_string(wait.count() / 1000) +
                  " s; with --fd-store-external `gdrproxy agent fd-store " + path +
                  "` runs it (the agent starts none)");
    ::usleep(100 * 1000);
  }
  return FdStoreClient(path, false, std::move(lock), true);
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
  if (holder_answers(path_)) {
    const auto name = name_of(path_);
    if (name == holder_name_ && !holder_lost_) return std::nullopt;
    // Another holder than the one that has the entries (an external one restarted).
    holder_name_ = name;
    holder_lost_ = false;
    forget_exited();
  } else if (external_) {
    if (holder_lost_) return std::nullopt;
    holder_lost_ = true;
    throw Error(
        "it is external (--fd-store-external), so the agent starts none; every live "
        "process's entry goes into the next one that answers");
  } else {
    forget_exited();
    start_holder(path_);
    holder_name_ = name_of(path_);
  }
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
