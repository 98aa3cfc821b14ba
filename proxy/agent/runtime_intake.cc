#include "proxy/agent/runtime_intake.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "base/unix_request.h"

namespace gdrproxy::proxy {

namespace asio = boost::asio;
using local = asio::local::stream_protocol;

RuntimeIntake::RuntimeIntake(asio::io_context& io, const AgentOptions& options,
                             FdStoreClient* store, AgentLog log, Adopt adopt)
    : io_(io),
      opts_(options),
      store_(store),
      log_(std::move(log)),
      adopt_(std::move(adopt)),
      acceptor_(open_runtime_socket()),
      handshakes_(std::chrono::milliseconds(options.handshake_deadline_ms),
                  options.max_handshakes) {}

// With the fd store, the holder keeps a copy of the socket: a killed agent's socket stays bound
// and listening, so the runtimes that connect until the next agent starts wait in its backlog
// (fd_store.h), and the next agent takes it back.
LocalAcceptor RuntimeIntake::open_runtime_socket() {
  local::acceptor a(io_);
  if (store_) {
    if (UniqueFd kept = store_->take_runtime_socket(opts_.socket)) {
      a.assign(local(), kept.release());
      log_("runtime socket " + opts_.socket + " taken back from the fd store " + store_->path() +
           " (runtimes that connected while no agent ran are served now)");
      return a;
    }
  }
  a = bind_root_only(io_, opts_.socket);
  if (store_) store_->keep_runtime_socket(a.native_handle(), opts_.socket);
  return a;
}

// Who accepts runtimes: with the fd store, its holder (it keeps each connection from its accept
// and sends this agent a copy), so that no handover is ever this agent's alone; without it, or
// while no holder that can runs, this agent on its own socket.
void RuntimeIntake::serve() {
  if (store_) {
    if (auto sub = store_->subscribe()) {
      if (self_accepting_) {
        self_accepting_ = false;
        boost::system::error_code ec;
        acceptor_.cancel(ec);
        log_("fd store " + store_->path() + ": its new holder accepts runtimes for this agent");
      }
      subscription_.emplace(io_, sub->socket.release());
      if (sub->kept > 0)
        log_("fd store " + store_->path() + ": " + std::to_string(sub->kept) +
             " runtime connection(s) an earlier agent had not read whole: read again");
      read_subscription();
      return;
    }
  }
  if (self_accepting_) return;
  self_accepting_ = true;
  accept_each(
      acceptor_, [this](LocalSocket s) { on_connection(std::move(s)); },
      [this] { return self_accepting_; }, "a runtime connection", log_);
}

// The connections the holder accepted for this agent; when it closes the subscription (it was
// killed), this agent accepts on its own until a new holder runs (serve() again).
void RuntimeIntake::read_subscription() {
  subscription_->async_wait(asio::posix::stream_descriptor::wait_read,
                            [this](const boost::system::error_code& ec) {
                              if (ec) return;
                              take_subscribed_connections();
                            });
}

void RuntimeIntake::take_subscribed_connections() {
  for (int i = 0; i < 64; ++i) {  // a bounded share of the loop's turn
    bool ended = false;
    auto c = FdStoreClient::next_connection(subscription_->native_handle(), ended);
    if (ended) {
      subscription_.reset();
      log_("fd store " + store_->path() + ": its holder stopped accepting runtimes for this " +
           "agent (it is gone): accepting them here until a new holder runs");
      serve();
      return;
    }
    if (!c) break;
    local::socket s(io_);
    s.assign(local(), c->conn.release());
    if (const auto pid = root_peer(s))
      read_state(std::move(s), *pid, c->key);
    else
      forget_connection(c->key);
  }
  read_subscription();
}

// A runtime's connection on the agent's own socket. With the fd store, the connection itself goes
// there first and is only peeked at: a kill of this agent before the state is whole (the
// runtime's bytes still on their way) leaves it all for the next agent.
void RuntimeIntake::on_connection(LocalSocket s) {
  const auto pid = root_peer(s);
  if (!pid) return;
  std::optional<uint64_t> key;
  if (store_ && store_->names_entries()) key = store_->keep_connection(s.native_handle());
  read_state(std::move(s), *pid, key.value_or(0));
}

// Only root hands over listeners: the connecting process's pid when it is root's.
std::optional<pid_t> RuntimeIntake::root_peer(LocalSocket& s) {
  const auto cred = peer_credentials(s.native_handle());
  if (cred && cred->uid == 0) return cred->pid;
  log_("refused a connection from uid " + (cred ? std::to_string(cred->uid) : "?") + " pid " +
       (cred ? std::to_string(cred->pid) : "?") + ": only root hands over listeners");
  return std::nullopt;
}

// `pid`: the runtime's; `conn_key`: the fd store's entry for this connection (0: none; the state
// is then read, not peeked); whatever becomes of the state, that entry goes (replaced by the
// listener's, or forgotten).
void RuntimeIntake::read_state(LocalSocket s, pid_t pid, uint64_t conn_key) {
  const std::string who = "runtime pid " + std::to_string(pid);
  auto reader = std::make_shared<StateReader>(conn_key != 0);
  handshakes_.add(
      std::move(s),
      [this, reader, who, conn_key](int fd) -> std::optional<std::string> {
        std::string why;
        switch (reader->read_available(fd, why)) {
          case StateReader::Step::kMore:
            return std::nullopt;
          case StateReader::Step::kFailed:
            log_(who + ": " + why);
            forget_connection(conn_key);
            break;
          case StateReader::Step::kDone:
            admit(reader->take(), who, conn_key);
            break;
        }
        return std::string();
      },
      [this, who, reader, conn_key](const std::string& why) {
        log_(who + ": its connection (" + std::to_string(reader->bytes()) + " bytes received) " +
             why);
        forget_connection(conn_key);
      },
      reader->leaves_in_socket());
}

void RuntimeIntake::forget_connection(uint64_t conn_key) {
  if (conn_key != 0) store_->forget(conn_key);
}

// A runtime's whole state: its listener goes to the fd store first, before anything slow (in
// place of the connection it came on, when that is there): from there a kill of this agent
// mid-adoption loses nothing (the next agent adopts the entry again); a refusal then forgets it.
void RuntimeIntake::admit(ReceivedState rs, const std::string& who, uint64_t conn_key) {
  // Every received fd is ours to close but the listener, which a session takes over.
  std::vector<UniqueFd> fds;
  fds.reserve(rs.fds.size());
  for (const int f : rs.fds) fds.emplace_back(f);
  std::string why;
  const auto st = parse_container_process_state(rs.json, rs.fds.size(), why);
  if (!st) {
    log_(who + ": " + why);
    forget_connection(conn_key);
    return;
  }
  const std::string process = process_name(*st);
  Handover h;
  h.listener = std::move(fds[st->seccomp_fd_index]);
  // Bind the session to the process, not to the message: it must exist now. A process its
  // runtime did not name (pid 0, crun's exec) is bound to its first caller instead, and only
  // then put in the fd store (served_container.cc).
  if (st->pid != 0) h.pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, st->pid, 0)));
  if (st->pid != 0 && !h.pidfd) {
    log_(process + " is gone (" + std::strerror(errno) + "): listener closed");
    forget_connection(conn_key);
    return;
  }
  // Where its receiver stores each received id: kept with the listener, so that the next agent
  // can answer what this one had received if it is killed (received_ids.h).
  try {
    h.ids = ReceivedIdPage::create();
  } catch (const std::exception& e) {
    log_(process + ": " + e.what() + ": listener closed");
    forget_connection(conn_key);
    return;
  }
  if (st->pid == 0) {
    forget_connection(conn_key);
  } else if (store_ && store_->names_entries()) {
    if (const auto key =
            store_->put(rs.json, {h.listener.get(), h.pidfd.get(), h.ids.fd()}, conn_key)) {
      h.key = *key;
      h.in_holder = true;
    } else {
      forget_connection(conn_key);
    }
  }
  adopt_(*st, std::move(h), rs.json);
}

// The listeners a previous agent left in the fd store: each process comes back as if its
// runtime had just handed it over, through the pidfd that agent verified; one that cannot is
// dropped from the store, that entry alone (its container's other processes keep theirs).
void RuntimeIntake::reattach(bool previous_agent_stuck) {
  if (!store_) return;
  std::vector<StoredListener> kept = store_->take_all();
  log_("fd store " + store_->path() + ": " + std::to_string(kept.size()) + " process(es) kept");
  for (StoredListener& l : kept) {
    Handover h;
    h.listener = std::move(l.listener);
    h.pidfd = std::move(l.pidfd);
    h.key = l.key;
    h.in_holder = true;
    h.from_previous_agent = true;
    std::string why;
    const auto st = parse_container_process_state(l.state_json, 1, why);
    if (!st) {
      log_("fd store: " + why);
      h.listener.reset();
      if (h.key != 0) store_->forget(h.key);
      continue;
    }
    const std::string process = process_name(*st);
    if (!h.pidfd) {
      log_(process + ": the fd store kept no pidfd for it (a holder older than this agent): " +
           "listener closed");
    } else {
      try {
        h.ids = ReceivedIdPage::adopt(std::move(l.ids), !previous_agent_stuck);
        adopt_(*st, std::move(h), l.state_json);
        continue;
      } catch (const std::exception& e) {
        log_(process + ": " + e.what() + ": listener closed");
      }
    }
    let_go(h, st->state.id, store_);
  }
}

}  // namespace gdrproxy::proxy
