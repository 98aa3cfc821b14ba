// The agent's listener server, container registry and control socket, on the engine's loop.
// A connection is one runtime handing over one process's listener; it is read asynchronously
// (handshakes.h: a total deadline, a cap on how many are read at once, the oldest closed for a
// new one; 64 KiB) and only root may connect, so the loop never waits on a peer. Only a real
// seccomp listener is taken (listener_check.h), and a container's bundle is read off the loop
// (bundle_reads.h). Sessions end when every listener of their container has hung up; the
// registry then drops them.
#include "proxy/agent/agent.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "base/error.h"
#include "base/escape.h"
#include "base/process_info.h"
#include "base/unique_fd.h"
#include "base/unix_request.h"
#include "proxy/agent/agent_config.h"
#include "proxy/agent/bundle_check.h"
#include "proxy/agent/bundle_reads.h"
#include "proxy/agent/fd_store.h"
#include "proxy/agent/handshakes.h"
#include "proxy/agent/listener_check.h"
#include "proxy/agent/state_socket.h"
#include "proxy/engine/engine.h"
#include "proxy/engine/received_ids.h"
#include "proxy/engine/session.h"
#include "proxy/engine/session_setup.h"
#include "proxy/oci/container_grants.h"
#include "proxy/oci/container_state.h"
#include "proxy/oci/hook_command.h"

namespace gdrproxy::proxy {
namespace {

namespace asio = boost::asio;
using local = asio::local::stream_protocol;

// The agent must see every container's processes with host pids: seccomp reports pids in the
// listener holder's pid namespace, and the BPF observer reports host tids.
bool in_initial_pid_namespace() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("NSpid:", 0) == 0) {
      // One pid: the initial namespace; one more per level of nesting.
      std::istringstream pids(line.substr(6));
      int levels = 0;
      for (std::string p; pids >> p;) ++levels;
      return levels == 1;
    }
  }
  return true;  // a kernel without NSpid has no pid namespaces to be in
}

// Binds a root-only stream socket at `path` (mode 0600 in a 0700 directory we create if
// missing); a stale socket nobody serves (or only a killed agent that cannot finish exiting) is
// replaced (`*replaced_stuck` set), a live one is an error.
local::acceptor bind_root_only(asio::io_context& io, const std::string& path,
                               bool* replaced_stuck = nullptr) {
  const auto slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    const std::string dir = path.substr(0, slash);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      throw_errno("cannot create " + dir, errno);
  }
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) throw Error(path + " exists and is not a socket");
    local::socket probe(io);
    boost::system::error_code ec;
    probe.connect(local::endpoint(path), ec);
    if (!ec) {
      const auto server = peer_credentials(probe.native_handle());
      if (!server || !killed_but_not_gone(server->pid))
        throw Error(path + ": another agent is serving it");
      std::fprintf(stderr,
                   "gdrproxy agent: %s: its agent (pid %d) was killed and cannot finish exiting (a "
                   "thread blocked in the kernel): replaced\n",
                   path.c_str(), server->pid);
      if (replaced_stuck) *replaced_stuck = true;
    }
    ::unlink(path.c_str());
  }
  const mode_t old = ::umask(0177);
  local::acceptor a(io);
  boost::system::error_code ec;
  a.open(local(), ec);
  if (!ec) a.bind(local::endpoint(path), ec);
  ::umask(old);
  // Room for the runtimes that connect while an agent restarts (they wait here; see fd_store.h).
  if (!ec) a.listen(1024, ec);
  if (ec) throw Error("cannot listen on " + path + ": " + ec.message());
  ::chmod(path.c_str(), 0600);
  return a;
}

// How the agent's lines name a handed-over process: "container ID: process PID".
std::string process_name(const ContainerProcessState& st) {
  return "container " + st.state.id + ": process " + std::to_string(st.pid);
}

// One process's handover, from a runtime or from the fd store, until a session takes it.
struct Handover {
  UniqueFd listener;
  UniqueFd pidfd;
  ReceivedIdPage ids;
  uint64_t key = 0;                  // its fd-store entry (0: none, or an older holder's)
  bool in_holder = false;            // the fd store keeps it already
  bool from_previous_agent = false;  // re-attached from the fd store
  // What the agent verified of the process through its pidfd.
  ino_t pidns = 0;
  std::string cgroup;
};

// Bundle reads past their deadline (their thread blocked on a filesystem that does not answer)
// after which handovers are refused at once.
constexpr size_t kMaxStuckBundleReads = 8;

// A container's scope in the agent's BPF LSM judge: its cgroup and tables go with it.
class JudgedScope {
 public:
  JudgedScope(IoctlLsm& lsm, uint32_t number) : lsm_(lsm), number_(number) {}
  ~JudgedScope() {
    if (!left_to_pins_) lsm_.forget_scope(number_);
  }
  // Left judged in the pinned judge when this agent stops (the next one takes it over).
  void leave_to_pins() { left_to_pins_ = true; }
  JudgedScope(const JudgedScope&) = delete;
  JudgedScope& operator=(const JudgedScope&) = delete;
  uint32_t number() const { return number_; }

 private:
  IoctlLsm& lsm_;
  const uint32_t number_;
  bool left_to_pins_ = false;
};

struct Container {
  std::string id;
  std::string bundle, status, metadata, rule;
  pid_t pid = -1;
  // What the agent verified of the init process (through its pidfd), not what the runtime said:
  // every process that later joins the container must be in this pid namespace.
  ino_t pidns = 0;
  std::string cgroup;
  std::optional<std::string> group;  // the rule's pidfd_getfd_group
  unsigned listeners = 0;
  bool draining = false;  // `ctl drain ID`: no new process joins; served until its last exits
  std::vector<std::string> grants;
  Mode mode = Mode::kEnforce;
  // Its scope in the agent's BPF LSM judge, which judges its cgroup (0: not judged in the
  // kernel, `judged` says why). Declared before the session: forgotten after it stopped.
  std::unique_ptr<JudgedScope> scope;
  std::string judged;
  uint32_t judged_from_creation = 0;  // the pending scope its own replaced (0: none)
  std::unique_ptr<Session> session;
};

// A container's cgroup judged from its creation until its handover (`gdrproxy hook judge`, the
// createRuntime hook `oci prepare --lsm-hook` writes): a scope with no grant, so the kernel
// refuses every ioctl on a guarded node from that cgroup until the handover gives the container
// its own scope (in one update). Without it the container could run, between the runtime's
// handover and the agent reading it, ioctls its filter never traps on an fd it did not open.
struct PendingJudgement {
  std::string id;  // the container, as the runtime's state named it
  std::string cgroup;
  std::unique_ptr<JudgedScope> scope;
};

// The pid namespace and cgroup of the process behind `pidfd` (whose pid is `pid`), read through
// /proc and confirmed afterwards: the pidfd still signals as alive, so the reads were of that
// process and not of a reused pid. False when it is gone.
bool verified_facts(int pidfd, pid_t pid, ino_t& pidns, std::string& cgroup) {
  pidns = pid_namespace_of(pid);
  cgroup = cgroup_of(pid);
  return pidns != 0 && ::syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) == 0;
}

// The pid (in our pid namespace) of the process behind `pidfd`, from /proc/self/fdinfo; <= 0 when
// it is gone (kernels before 5.13 may still show its number: verified_facts then finds it dead).
pid_t pid_of_pidfd(int pidfd) {
  std::ifstream in("/proc/self/fdinfo/" + std::to_string(pidfd));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Pid:", 0) == 0)
      return static_cast<pid_t>(std::strtol(line.c_str() + 4, nullptr, 10));
  return -1;
}

class Agent {
 public:
  Agent(const AgentOptions& o, AgentConfig config)
      : opts_(o),
        config_(std::move(config)),
        // The command line's choice of NVIDIA tables over the config's.
        engine_(DeviceCatalog::scan(o.dev_root),
                o.nvidia_abi_as ? o.nvidia_abi_as : config_.nvidia_abi_as),
        // The control socket first: its check finds an agent that still serves these paths
        // (the runtime socket may be one the fd store kept for us, which answers while no
        // agent runs).
        ctl_(bind_root_only(engine_.io(), o.ctl_socket, &previous_agent_stuck_)),
        store_(o.fd_store ? std::optional(FdStoreClient::connect_or_start(*o.fd_store))
                          : std::nullopt),
        acceptor_(open_runtime_socket()),
        signals_(engine_.io(), SIGTERM, SIGINT),
        handshakes_(std::chrono::milliseconds(o.handshake_deadline_ms), o.max_handshakes),
        ctl_handshakes_(std::chrono::milliseconds(o.handshake_deadline_ms), o.max_handshakes) {}

  // A stop is a restart when the fd store keeps the containers (systemd's restart and an upgrade
  // send SIGTERM): the runtime socket stays, kept listening by the holder, so that runtimes wait
  // in its backlog for the next agent as they do after a kill. A drained agent is going away:
  // its socket goes, and runtimes are refused.
  ~Agent() {
    if (!store_ || draining_) ::unlink(opts_.socket.c_str());
    ::unlink(opts_.ctl_socket.c_str());
  }

  int run() {
    ::signal(SIGPIPE, SIG_IGN);
    load_judge();  // first: --lsm on without a judge serves nothing
    accept(ctl_, &Agent::on_ctl, "a control connection");
    signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      log("stopping on signal " + std::to_string(sig) + ": " + std::to_string(containers_.size()) +
          (store_ ? " container(s) stay in the fd store for the next agent (their trapped calls "
                    "wait), and so does the runtime socket (runtimes wait in its backlog)"
                  : " container(s) lose their listener (their trapped calls fail with ENOSYS)"));
      engine_.io().stop();
    });
    // The agent runs for long: it waits for the trap copies, and says if they are unavailable.
    engine_.start_trap_copies(opts_.trap_copy);
    if (const std::string why = engine_.trap_copies_unavailable(); !why.empty())
      log("trap copies unavailable (" + why +
          "): every trapped ioctl's fd and argument are looked up by the agent");
    reattach();
    serve_runtimes();
    watch_holder();
    // Rails a container's poststop never gave back (a runtime killed, a failed hook).
    if (restore_rails_of_gone_containers(opts_.rail_state_dir,
                                         [this](const std::string& line) { log(line); }) != 0)
      log("some rails could not be given back: gdrproxy hook sweep --state-dir " +
          opts_.rail_state_dir + " retries");
    if (const std::string& n = engine_.nvidia().notice; !n.empty()) log(n);
    log("serving " + opts_.socket + " (control: " + opts_.ctl_socket + ")");
    engine_.io().run();
    // Results still in the observer's ring (it is drained every few milliseconds) go to their
    // sessions' records first; only what has not returned is "the agent stopped".
    // (A session stuck in a call is left to the loop below, which asks it again.)
    for (auto& [id, c] : containers_) static_cast<void>(c->session->stop());
    engine_.drain_observer();
    for (auto& [id, c] : containers_) {
      if (!c->session->stop()) {
        // Its thread is blocked in the kernel on the tenant: left to the process's exit.
        log("container " + id + ": its session is stuck in a call, left running until exit");
        static_cast<void>(c->session.release());
        continue;
      }
      c->session->finish("the agent stopped");
    }
    release_judge();
    containers_.clear();
    return 0;
  }

 private:
  void log(const std::string& msg) const {
    if (!opts_.quiet) std::fprintf(stderr, "gdrproxy agent: %s\n", printable(msg).c_str());
  }

  // The socket runtimes hand listeners over on. With the fd store, the holder keeps a copy: a
  // killed agent's socket stays bound and listening, so the runtimes that connect until the next
  // agent starts wait in its backlog (fd_store.h), and the next agent takes it back.
  local::acceptor open_runtime_socket() {
    local::acceptor a(engine_.io());
    if (store_) {
      if (UniqueFd kept = store_->take_runtime_socket(opts_.socket)) {
        a.assign(local(), kept.release());
        log("runtime socket " + opts_.socket + " taken back from the fd store " + store_->path() +
            " (runtimes that connected while no agent ran are served now)");
        return a;
      }
    }
    a = bind_root_only(engine_.io(), opts_.socket);
    if (store_) store_->keep_runtime_socket(a.native_handle(), opts_.socket);
    return a;
  }

  // Serves `acceptor` with `handle` for each connection, on the loop; a handler's exception is
  // logged and costs that connection only. A failed accept (out of fds) is retried shortly:
  // accepting never stops.
  void accept(local::acceptor& acceptor, void (Agent::*handle)(local::socket), const char* what) {
    acceptor.async_accept([this, &acceptor, handle, what](const boost::system::error_code& ec,
                                                          local::socket s) {
      if (ec == asio::error::operation_aborted) return;
      // The runtime socket is served here only while the fd store's holder does not accept on it.
      const auto wanted = [this, &acceptor] { return &acceptor != &acceptor_ || self_accepting_; };
      if (ec) {
        log(std::string("cannot accept ") + what + ": " + ec.message() + " (retrying in 100 ms)");
        auto t = std::make_shared<asio::steady_timer>(engine_.io(), std::chrono::milliseconds(100));
        t->async_wait(
            [this, t, &acceptor, handle, what, wanted](const boost::system::error_code& e) {
              if (!e && wanted()) accept(acceptor, handle, what);
            });
        return;
      }
      try {
        (this->*handle)(std::move(s));
      } catch (const std::exception& e) {
        log(std::string("internal error on ") + what + " (closed): " + e.what());
      }
      if (wanted()) accept(acceptor, handle, what);
    });
  }

  // Who accepts runtimes: with the fd store, its holder (it keeps each connection from its accept
  // and sends this agent a copy), so that no handover is ever this agent's alone; without it, or
  // while no holder that can runs, this agent on its own socket.
  void serve_runtimes() {
    if (store_) {
      if (auto sub = store_->subscribe()) {
        if (self_accepting_) {
          self_accepting_ = false;
          boost::system::error_code ec;
          acceptor_.cancel(ec);
          log("fd store " + store_->path() + ": its new holder accepts runtimes for this agent");
        }
        subscription_.emplace(engine_.io(), sub->socket.release());
        if (sub->kept > 0)
          log("fd store " + store_->path() + ": " + std::to_string(sub->kept) +
              " runtime connection(s) an earlier agent had not read whole: read again");
        read_subscription();
        return;
      }
    }
    if (self_accepting_) return;
    self_accepting_ = true;
    accept(acceptor_, &Agent::on_connection, "a runtime connection");
  }

  // The connections the holder accepted for this agent; when it closes the subscription (it was
  // killed), this agent accepts on its own until a new holder runs (check_holder).
  void read_subscription() {
    subscription_->async_wait(asio::posix::stream_descriptor::wait_read,
                              [this](const boost::system::error_code& ec) {
                                if (ec) return;
                                take_subscribed_connections();
                              });
  }
  void take_subscribed_connections() {
    for (int i = 0; i < 64; ++i) {  // a bounded share of the loop's turn
      bool ended = false;
      auto c = FdStoreClient::next_connection(subscription_->native_handle(), ended);
      if (ended) {
        subscription_.reset();
        log("fd store " + store_->path() + ": its holder stopped accepting runtimes for this " +
            "agent (it is gone): accepting them here until a new holder runs");
        serve_runtimes();
        return;
      }
      if (!c) break;
      local::socket s(engine_.io());
      s.assign(local(), c->conn.release());
      if (const auto pid = root_peer(s))
        read_state(std::move(s), *pid, c->key);
      else
        forget_connection(c->key);
    }
    read_subscription();
  }

  // A runtime's connection: read asynchronously until its state is whole, within the handshake
  // deadline; the loop serves everything else meanwhile. With the fd store, the connection
  // itself goes there first and is only peeked at: a kill of this agent before the state is
  // whole (the runtime's bytes still on their way) leaves it all for the next agent.
  void on_connection(local::socket s) {
    const auto pid = root_peer(s);
    if (!pid) return;
    std::optional<uint64_t> key;
    if (store_ && store_->names_entries()) key = store_->keep_connection(s.native_handle());
    read_state(std::move(s), *pid, key.value_or(0));
  }

  // Only root hands over listeners: the connecting process's pid when it is root's.
  std::optional<pid_t> root_peer(local::socket& s) {
    const auto cred = peer_credentials(s.native_handle());
    if (cred && cred->uid == 0) return cred->pid;
    log("refused a connection from uid " + (cred ? std::to_string(cred->uid) : "?") + " pid " +
        (cred ? std::to_string(cred->pid) : "?") + ": only root hands over listeners");
    return std::nullopt;
  }

  // `pid`: the runtime's; `conn_key`: the fd store's entry for this connection (0: none; the
  // state is then read, not peeked); whatever becomes of the state, that entry goes (replaced by
  // the listener's, or forgotten).
  void read_state(local::socket s, pid_t pid, uint64_t conn_key) {
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
              log(who + ": " + why);
              forget_connection(conn_key);
              break;
            case StateReader::Step::kDone:
              admit(reader->take(), who, conn_key);
              break;
          }
          return std::string();
        },
        [this, who, reader, conn_key](const std::string& why) {
          log(who + ": its connection (" + std::to_string(reader->bytes()) + " bytes received) " +
              why);
          forget_connection(conn_key);
        },
        reader->leaves_in_socket());
  }

  void forget_connection(uint64_t conn_key) {
    if (conn_key != 0) store_->forget(conn_key);
  }

  // A runtime's whole state: its listener goes to its container's session. It goes to the fd
  // store first, before anything slow (in place of the connection it came on, when that is
  // there): from there a kill of this agent mid-adoption loses nothing (the next agent adopts
  // the entry again); a refusal then forgets it.
  void admit(ReceivedState rs, const std::string& who, uint64_t conn_key) {
    // Every received fd is ours to close but the listener, which a session takes over.
    std::vector<UniqueFd> fds;
    fds.reserve(rs.fds.size());
    for (const int f : rs.fds) fds.emplace_back(f);
    std::string why;
    const auto st = parse_container_process_state(rs.json, rs.fds.size(), why);
    if (!st) {
      log(who + ": " + why);
      forget_connection(conn_key);
      return;
    }
    const std::string process = process_name(*st);
    Handover h;
    h.listener = std::move(fds[st->seccomp_fd_index]);
    // Bind the session to the process, not to the message: it must exist now.
    h.pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, st->pid, 0)));
    if (!h.pidfd) {
      log(process + " is gone (" + std::strerror(errno) + "): listener closed");
      forget_connection(conn_key);
      return;
    }
    // Where its receiver stores each received id: kept with the listener, so that the next agent
    // can answer what this one had received if it is killed (received_ids.h).
    try {
      h.ids = ReceivedIdPage::create();
    } catch (const std::exception& e) {
      log(process + ": " + e.what() + ": listener closed");
      forget_connection(conn_key);
      return;
    }
    if (store_ && store_->names_entries()) {
      if (const auto key =
              store_->put(rs.json, {h.listener.get(), h.pidfd.get(), h.ids.fd()}, conn_key)) {
        h.key = *key;
        h.in_holder = true;
      } else {
        forget_connection(conn_key);
      }
    }
    begin_adoption(*st, std::move(h), rs.json);
  }

  // --lsm: the BPF LSM judge, loaded once before any container is adopted.
  void load_judge() {
    if (opts_.lsm == LsmChoice::kOff) return;
    std::string why;
    judge_ = opts_.lsm_pin ? IoctlLsm::load_pinned(*opts_.lsm_pin, why) : IoctlLsm::load(why);
    if (!judge_ && opts_.lsm_pin && opts_.lsm == LsmChoice::kAuto) {
      // Pins unusable: a judge for this agent's life is still better than none.
      const std::string pin_why = why;
      judge_ = IoctlLsm::load(why);
      if (judge_)
        log("--lsm auto: " + pin_why +
            "; the judge is not pinned (containers whose profiles need a pinned one are refused)");
    }
    if (!judge_) {
      if (opts_.lsm == LsmChoice::kOn) throw Error("--lsm on: " + why);
      log("--lsm auto: " + why + "; containers' device ioctls are judged by the agent alone");
      return;
    }
    judge_refusals_.emplace(engine_.io(), *judge_, nullptr,
                            [this](const IoctlLsm::Refusal& f) { say_refusal(f); });
    if (judge_->inherited()) {
      // The containers an earlier agent judged stay judged until adopted again or gone.
      last_scope_ = judge_->highest_inherited_scope();
      log("BPF LSM judge taken over from " + judge_->pinned_at() + ": " +
          std::to_string(judge_->inherited_cgroups()) +
          " cgroup(s) an earlier agent judged are judged still");
    } else {
      log("BPF LSM judge loaded" +
          (judge_->pinned_at().empty()
               ? std::string()
               : " and pinned at " + judge_->pinned_at() + " (it outlives this agent)") +
          ": each container's ioctls are judged in the kernel by its cgroup");
    }
    retire_other_judges(true);
    sweep_refusals();
  }

  // Judges of other builds pinned beside this agent's (an upgrade's older one): each goes once the
  // cgroups it judges are gone. Said at start (`at_start`) for each one found, later for each
  // one removed.
  void retire_other_judges(bool at_start) {
    if (!judge_ || judge_->pinned_at().empty() || (!at_start && !other_judges_left_)) return;
    other_judges_left_ = false;
    for (const IoctlLsm::OtherJudge& o : judge_->retire_other_judges()) {
      if (o.cgroups > 0) {
        other_judges_left_ = true;
        if (at_start)
          log("BPF LSM judge of another build pinned at " + o.dir + " still judges " +
              std::to_string(o.cgroups) + " cgroup(s): left until they are gone");
      } else {
        log("BPF LSM judge of another build pinned at " + o.dir +
            (at_start ? " judges no cgroup that exists: unpinned"
                      : ": its last judged cgroup is gone: unpinned"));
      }
    }
  }

  // At the stop: a pinned judge keeps judging the containers that still run (the next agent
  // takes them over); one that judges nothing more is unpinned, and ends with this agent.
  void release_judge() {
    if (!judge_ || judge_->pinned_at().empty()) return;
    if (containers_.empty() && pending_.empty() && judge_->inherited_cgroups() == 0) {
      judge_->unpin();
      log("BPF LSM judge unpinned from " + judge_->pinned_at() + ": no container left to judge");
      return;
    }
    for (auto& [id, c] : containers_)
      if (c->scope) c->scope->leave_to_pins();
    // Judged from their creation: the next agent inherits them, as it does containers.
    for (auto& [cg, p] : pending_) p.scope->leave_to_pins();
    log("BPF LSM judge stays pinned at " + judge_->pinned_at() + ", judging " +
        std::to_string(containers_.size() + pending_.size()) +
        " container(s) until the next agent takes it over");
  }

  // A refusal whose wake-up the judge skipped (it wakes once per batch) waits at most a second.
  void sweep_refusals() {
    judge_sweep_.expires_after(std::chrono::seconds(1));
    judge_sweep_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      judge_refusals_->take();
      forget_pending_of_gone_cgroups();
      retire_other_judges(false);
      if (judge_->inherited_cgroups() > 0)
        if (const size_t gone = judge_->sweep_inherited())
          log("BPF LSM judge: " + std::to_string(gone) +
              " cgroup(s) an earlier agent judged are gone, and forgotten");
      sweep_refusals();
    });
  }

  // A container judged from its creation whose cgroup is gone never came to be (its runtime
  // failed, or it was refused): its scope goes.
  void forget_pending_of_gone_cgroups() {
    if (pending_.empty()) return;
    const UniqueFd root = cgroup2_root();
    std::erase_if(pending_, [&](const auto& p) {
      if (cgroup_v2_exists(root.get(), p.first)) return false;
      log("container " + printable(p.second.id) +
          ": its cgroup is gone before its handover; no longer judged from its creation");
      return true;
    });
  }

  // `ctl judge-pending PID ID` (`gdrproxy hook judge`, at the container's createRuntime): judges
  // the cgroup of process PID, the container's init, in a scope with no grant until its handover.
  // Answers one JSON line: "judged" "pending" or "already" (its handover came first), false with
  // "why" (no judge, or --lsm auto and it cannot be judged), or "error" (--lsm on: the runtime
  // then fails the container's creation).
  std::string judge_pending(const std::string& args) {
    const auto answer = [](nlohmann::json j) {
      return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    };
    const size_t space = args.find(' ');
    const std::string pid_text = args.substr(0, space);
    const std::string id = space == std::string::npos ? "" : args.substr(space + 1);
    char* end = nullptr;
    const long pid = std::strtol(pid_text.c_str(), &end, 10);
    if (pid_text.empty() || *end != '\0' || pid <= 0 || pid > INT32_MAX)
      return answer({{"error", "expected judge-pending PID [ID]"}});
    const std::string who = "container " + printable(id) + " (pid " + pid_text + ")";
    if (!judge_) {
      const std::string why = opts_.lsm == LsmChoice::kOff
                                  ? "the agent runs without --lsm"
                                  : "the agent has no BPF LSM judge (--lsm auto, none here)";
      log(who + ": its runtime asks for a judge from its creation, but " + why +
          ": not judged in the kernel");
      return answer({{"judged", false}, {"why", why}});
    }
    const auto refuse = [&](const std::string& why) {
      log(who + ": cannot be judged from its creation: " + why);
      if (opts_.lsm == LsmChoice::kOn) return answer({{"error", "--lsm on: " + why}});
      return answer({{"judged", false}, {"why", why}});
    };
    const UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0)));
    ino_t pidns = 0;
    std::string cgroup;
    if (!pidfd || !verified_facts(pidfd.get(), static_cast<pid_t>(pid), pidns, cgroup))
      return answer({{"error", "process " + pid_text + " is gone"}});
    // A container's init has a mount namespace of its own; a host process does not, and judging
    // its cgroup would refuse the host's own device calls.
    if (mount_namespace_of(static_cast<pid_t>(pid)) == mount_namespace_of(::getpid()))
      return answer({{"error", "process " + pid_text +
                                   " shares the agent's mount namespace: not a container's"}});
    const std::string own = cgroup_of(::getpid());
    if (cgroup.empty() || cgroup == "/" || own == cgroup || own.rfind(cgroup + "/", 0) == 0)
      return refuse("its cgroup " + printable(cgroup) + " holds the agent itself");
    for (const auto& [cid, c] : containers_)
      if (c->scope && c->cgroup == cgroup) return answer({{"judged", "already"}});
    std::string why;
    const std::optional<CgroupV2> at = cgroup_v2(cgroup, why);
    if (!at) return refuse(why);
    if (pending_.count(at->id)) return answer({{"judged", "pending"}});
    try {
      const uint32_t number = ++last_scope_;
      const std::shared_ptr<const DeviceCatalog> catalog = engine_.live_catalog().refreshed();
      const Grants none = Grants::from_specs(*catalog, std::vector<std::string>{});
      judge_->add_scope(number, ioctl_lsm_tables(*catalog, none, KernelAllowed{}));
      auto scope = std::make_unique<JudgedScope>(*judge_, number);
      judge_->judge_cgroup(*at, number);
      pending_[at->id] = PendingJudgement{id, cgroup, std::move(scope)};
    } catch (const std::exception& e) {
      return refuse(e.what());
    }
    log(who + ": judged in the kernel from its creation (cgroup " + printable(cgroup) +
        "): every ioctl on a guarded device refused until its handover");
    return answer({{"judged", "pending"}});
  }

  // Adopts a handover in two steps: the process is checked now (a seccomp listener, alive, its
  // pid namespace and cgroup through its pidfd); its bundle is read on a thread of its own
  // (bundle_reads.h: a hung filesystem must not hold the loop), and the adoption finishes on the
  // loop with that answer. A refusal at either step lets the handover go.
  void begin_adoption(const ContainerProcessState& st, Handover handover, const std::string& json) {
    auto h = std::make_shared<Handover>(std::move(handover));
    if (!check_process(st, *h)) {
      let_go(*h, st.state.id);
      return;
    }
    const auto finish = [this, st, h, json](BundleReads::Result bundle) {
      const std::string who = process_name(st);
      try {
        if (!bundle.ok) {
          log(who + " refused: " + bundle.why + " (its trapped calls fail with ENOSYS)");
        } else if (adopt(st, *h, json, bundle.untrapped)) {
          if (h->from_previous_agent)
            log("container " + st.state.id + ": re-attached from the fd store " + store_->path() +
                " (process " + std::to_string(st.pid) + ")");
          return;
        }
      } catch (const std::exception& e) {
        log(who + ": internal error while adopting it: " + e.what());
        if (!h->listener) return;  // a session has it
      }
      let_go(*h, st.state.id);
    };
    try {
      bundle_reads_.check(st.state.bundle, opts_.socket, st.metadata, finish);
    } catch (const std::exception& e) {  // no thread could be started
      log(process_name(st) + ": its bundle cannot be read (" + e.what() + "): listener closed");
      let_go(*h, st.state.id);
    }
  }

  // A listener refused: closed here, and its fd-store entry (this handover's, or the one it
  // came from) forgotten, so that its process's trapped calls fail rather than wait.
  void let_go(Handover& h, const std::string& id) {
    h.listener.reset();
    if (!h.in_holder) return;
    if (h.key != 0)
      store_->forget(h.key);
    else
      store_->forget_container_in_older_holder(id);
  }

  // The listeners a previous agent left in the fd store: each process comes back as if its
  // runtime had just handed it over, through the pidfd that agent verified; one that cannot is
  // dropped from the store, that entry alone (its container's other processes keep theirs).
  void reattach() {
    if (!store_) return;
    std::vector<StoredListener> kept = store_->take_all();
    log("fd store " + store_->path() + ": " + std::to_string(kept.size()) + " process(es) kept");
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
        log("fd store: " + why);
        h.listener.reset();
        if (h.key != 0) store_->forget(h.key);
        continue;
      }
      const std::string process = process_name(*st);
      if (!h.pidfd) {
        log(process + ": the fd store kept no pidfd for it (a holder older than this agent): " +
            "listener closed");
      } else {
        try {
          h.ids = ReceivedIdPage::adopt(std::move(l.ids), !previous_agent_stuck_);
          begin_adoption(*st, std::move(h), l.state_json);
          continue;
        } catch (const std::exception& e) {
          log(process + ": " + e.what() + ": listener closed");
        }
      }
      let_go(h, st->state.id);
    }
  }

  // The first step of an adoption: `h` holds the pidfd the process was found by (from a
  // runtime: opened by its pid on receipt; from the fd store: the one the adopting agent
  // verified, never its pid looked up again, since the process may have exited while no agent
  // ran and its pid be another's now); it must be that process, alive, with a seccomp listener.
  // Fills in what was verified of it. False: refused (said here).
  bool check_process(const ContainerProcessState& st, Handover& h) {
    const std::string who = process_name(st);
    // Anything but a seccomp listener would make a session that waits on it for ever; checked
    // for fd-store entries too (a holder of an older agent may have kept one).
    std::string why;
    if (!is_seccomp_listener(h.listener.get(), why)) {
      log(who + " refused: " + why);
      return false;
    }
    const char* const gone =
        h.from_previous_agent ? " exited while no agent ran" : " exited while it was being checked";
    const pid_t pid = pid_of_pidfd(h.pidfd.get());
    if (pid != st.pid || !verified_facts(h.pidfd.get(), pid, h.pidns, h.cgroup)) {
      log(who + gone + ": listener closed");
      return false;
    }
    return true;
  }

  // The last step: gives the checked process's listener to its container's session, made on
  // first sight (`h.listener` is then empty); its bundle has been found to hand its listener to
  // this agent, its profile letting `untrapped` run without a trap. False: refused (the caller
  // lets it go: that process's trapped calls then fail with ENOSYS).
  bool adopt(const ContainerProcessState& st, Handover& h, const std::string& json,
             const ProfileUntrapped& untrapped) {
    const std::string& id = st.state.id;
    const std::string who = process_name(st);
    UniqueFd& listener = h.listener;
    std::string why;
    const ino_t pidns = h.pidns;
    const std::string cgroup = h.cgroup;
    UniqueFd pidfd = std::move(h.pidfd);
    ReceivedIdPage ids = std::move(h.ids);
    // One fd-store entry per process, with the pidfd checked here (the holder drops it when the
    // process exits); one put on receipt or from the store is there already. The client keeps
    // copies too, for a holder that has to be replaced. (Put here only for an older holder,
    // which names no entry: once the session has the listener, since such an entry could not
    // be forgotten alone.)
    std::array<UniqueFd, 3> copies;
    if (store_)
      for (size_t i = 0; const int f : {listener.get(), pidfd.get(), ids.fd()})
        copies[i++].reset(::fcntl(f, F_DUPFD_CLOEXEC, 0));
    const auto keep = [&] {
      if (copies[0] && copies[1] && copies[2] &&
          !store_->keep(id, json, std::move(copies), h.in_holder))
        check_holder();
    };
    auto it = containers_.find(id);
    if (draining_ || (it != containers_.end() && it->second->draining)) {
      log(who + " refused: " + (draining_ ? "the agent is draining" : "the container is draining") +
          " (its trapped calls fail with ENOSYS)");
      return false;
    }
    if (it != containers_.end() && !it->second->session->ended()) {
      Container& c = *it->second;
      // `runc exec` enters the container's namespaces: a process elsewhere that names this
      // container is not one of its processes, whatever the message says.
      if (pidns != c.pidns || st.state.bundle != c.bundle) {
        log(who + " refused: it claims container " + id + " but " +
            (pidns != c.pidns ? "lives in another pid namespace" : "comes from another bundle") +
            " (its trapped calls fail with ENOSYS)");
        return false;
      }
      if (!untrapped_agrees(untrapped, c.session->kernel_allowed().requests, why)) {
        kill_refused(pidfd.get(), who, why);
        return false;
      }
      // The judge judges the container's cgroup and what lies below it: a process elsewhere
      // would run unjudged (`runc exec --cgroup` may name only a cgroup below it).
      if (c.scope && cgroup != c.cgroup && cgroup.rfind(c.cgroup + "/", 0) != 0) {
        kill_refused(pidfd.get(), who,
                     "it runs in cgroup " + printable(cgroup) + ", outside its container's " +
                         printable(c.cgroup) + ", where the BPF LSM judge does not judge it");
        return false;
      }
      c.session->add_listener(listener.release(), std::move(ids));
      keep();
      ++c.listeners;
      log(who + " (" + container_status_name(st.state.status) + ") joins its session (" +
          std::to_string(c.listeners) + " listeners)");
      return true;
    }
    auto c = std::make_unique<Container>();
    c->id = id;
    c->bundle = st.state.bundle;
    c->status = container_status_name(st.state.status);
    c->metadata = st.metadata;
    c->pid = st.pid;
    c->pidns = pidns;
    c->cgroup = cgroup;
    const ContainerRule& rule = config_.rule_for(id, st.state.bundle, st.metadata);
    c->rule = rule.origin;
    c->group = rule.pidfd_getfd_group;
    SessionConfig cfg;
    cfg.name = id;
    try {
      cfg.policy =
          rule.policy_file ? Policy::load_file(*rule.policy_file) : Policy::builtin_default();
      std::optional<std::vector<std::string>> names =
          rule.grants ? rule.grants : cfg.policy.grants();
      if (rule.grants_from_metadata) {
        // The bundle's own choice (checked against its config.json above), within the rule's.
        const auto asked = grants_in_metadata(st.metadata);
        if (!asked) throw Error("its metadata has no gdrproxy-grants line");
        if (rule.grants)
          for (const std::string& n : *asked)
            if (std::find(rule.grants->begin(), rule.grants->end(), n) == rule.grants->end())
              throw Error("its metadata asks for " + n + ", which rule " + rule.origin +
                          " does not allow");
        names = *asked;
      }
      cfg.grants = Grants::from_specs(*engine_.live_catalog().refreshed(), names);
      cfg.mode = rule.mode.value_or(cfg.policy.mode().value_or(Mode::kEnforce));
      if (rule.trace && opts_.trace_dir)
        cfg.trace_json = *opts_.trace_dir + "/" + container_file_name(id) + ".jsonl";
      cfg.quiet = opts_.quiet;
      cfg.sync_wakeup = opts_.sync_wakeup;
      cfg.blocking_deadline_ms = opts_.blocking_deadline_ms;
      cfg.broker_pidfd_getfd = rule.broker_pidfd_getfd;
      const std::shared_ptr<const DeviceCatalog> catalog = engine_.live_catalog().refreshed();
      // Judged in the kernel by its cgroup, before its session serves a call. A pinned judge
      // (one that outlives this agent) lets its profile run requests untrapped on device classes
      // only partly granted, as `run --lsm` does.
      std::optional<CgroupV2> judged_at;
      if (judge_) judged_at = cgroup_v2(cgroup, c->judged);
      cfg.judged_per_device = judged_at && !judge_->pinned_at().empty();
      const bool untrapped_asked = untrapped.unjudged || !untrapped.requests.empty();
      const auto untrapped_set = [&](const SessionConfig& config) {
        std::string note;
        return container_untrapped_ioctls(config, engine_.nvidia(), *catalog, note);
      };
      KernelAllowed ours;
      if (untrapped_asked) ours = untrapped_set(cfg);
      if (judge_)
        c->scope = judge_container(judged_at, *catalog, cfg.grants, ours, untrapped.requests,
                                   c->judged, c->judged_from_creation);
      // --lsm auto serves it unjudged: a judgement from its creation would refuse it every call.
      if (!c->scope && judged_at) pending_.erase(judged_at->id);
      if (!c->scope && cfg.judged_per_device) {  // not judged after all
        cfg.judged_per_device = false;
        if (untrapped_asked) ours = untrapped_set(cfg);
      }
      // What its profile lets run untrapped never reaches this agent: each request must be one
      // this container's session would allow unread, or the container must not run at all.
      if (untrapped_asked) {
        if (!untrapped_agrees(untrapped, ours.requests, why)) {
          // A profile made for a judged container (`oci prepare --lsm-judged`) says so.
          std::string unused;
          SessionConfig judged = cfg;
          judged.judged_per_device = true;
          const bool needs_judge =
              !cfg.judged_per_device &&
              untrapped_agrees(untrapped, untrapped_set(judged).requests, unused);
          kill_refused(pidfd.get(), who,
                       why + (needs_judge ? " (device classes only partly granted need the "
                                            "agent's pinned BPF LSM judge over the container's "
                                            "cgroup: agent --lsm on --lsm-pin DIR)"
                                          : ""));
          return false;
        }
        cfg.kernel_allow = true;  // its stats then say what runs untrapped
      }
      c->grants = cfg.grants.all() ? std::vector<std::string>{"(all)"} : cfg.grants.names();
      c->mode = cfg.mode;
      c->session = std::make_unique<Session>(engine_, std::move(cfg));
    } catch (const std::exception& e) {
      log("container " + id + ": " + e.what() + ": listener closed");
      return false;
    }
    c->session->set_pid_namespace(pidns);
    if (c->group) {
      // Another container of the same group, alive now, owns that pid namespace.
      // Asked on the session's thread: the group table, not containers_, which is the loop's.
      c->session->set_peer_namespaces([this, group = *c->group, id](ino_t ns) {
        std::lock_guard<std::mutex> lock(groups_mu_);
        const auto [b, e] = group_members_.equal_range(group);
        for (auto m = b; m != e; ++m)
          if (m->second.first != id && m->second.second == ns) return true;
        return false;
      });
      std::lock_guard<std::mutex> lock(groups_mu_);
      group_members_.emplace(*c->group, std::make_pair(id, pidns));
    }
    c->session->on_end([this, id] {
      // Not from inside the session's own handler: drop it on the next turn of the loop.
      asio::post(engine_.io(), [this, id] { drop(id); });
    });
    c->session->watch_init(pidfd.get());
    static_cast<void>(pidfd.release());  // the session's now
    c->session->add_listener(listener.release(), std::move(ids));
    keep();
    c->listeners = 1;
    std::string g;
    for (const auto& n : c->grants) g += (g.empty() ? "" : ",") + n;
    log(who + " (" + container_status_name(st.state.status) + "), rule " + c->rule + ", grants [" +
        g + "], mode " + (c->mode == Mode::kEnforce ? "enforce" : "trace") +
        (rule.broker_pidfd_getfd
             ? ", pidfd_getfd brokered" + (c->group ? " in group " + *c->group : std::string())
             : std::string()) +
        (judge_ ? (c->scope ? ", judged in the kernel (BPF LSM) by its cgroup"
                            : ", not judged in the kernel: " + c->judged)
                : std::string()));
    containers_[id] = std::move(c);
    return true;
  }

  // Judges a new container in the kernel: a scope of its own, with tables from its grants and
  // the requests its profile lets run untrapped (`profile`, each allowed on the granted nodes
  // of the class `allowed` lists it for), over its cgroup v2, which holds every process of it
  // (those forked before this too) and every one `runc exec` adds. nullptr, and `why`, when it
  // cannot be judged (`cgroup` none: `why` says why already); with --lsm on that refuses it
  // (gdrproxy::Error). A cgroup judged from its creation (pending_) moves to the new scope in
  // one update; `from_creation` is then the pending scope's number.
  std::unique_ptr<JudgedScope> judge_container(const std::optional<CgroupV2>& cgroup,
                                               const DeviceCatalog& catalog, const Grants& grants,
                                               const KernelAllowed& allowed,
                                               const std::vector<uint32_t>& profile,
                                               std::string& why, uint32_t& from_creation) {
    std::unique_ptr<JudgedScope> scope;
    try {
      if (!cgroup) throw Error(why);
      // Only the requests this profile lets through are the judge's; the others trap.
      const auto in_profile = [&profile](std::vector<uint32_t> v) {
        std::erase_if(
            v, [&](uint32_t r) { return !std::binary_search(profile.begin(), profile.end(), r); });
        return v;
      };
      KernelAllowed judged;
      judged.requests = profile;
      judged.uvm_requests = in_profile(allowed.uvm_requests);
      judged.frontend_requests = in_profile(allowed.frontend_requests);
      const uint32_t number = ++last_scope_;
      judge_->add_scope(number, ioctl_lsm_tables(catalog, grants, judged));
      scope = std::make_unique<JudgedScope>(*judge_, number);
      const auto pending = pending_.find(cgroup->id);
      const uint32_t replacing = pending != pending_.end() ? pending->second.scope->number() : 0;
      judge_->judge_cgroup(*cgroup, number, replacing);
      if (replacing) {
        from_creation = replacing;
        pending_.erase(pending);
      }
      return scope;
    } catch (const std::exception& e) {
      why = e.what();
      if (opts_.lsm == LsmChoice::kOn)
        throw Error("--lsm on: it cannot be judged in the kernel (" + why + ")");
      return nullptr;
    }
  }

  // A refusal of the judge, said by the session of the container it was made for.
  void say_refusal(const IoctlLsm::Refusal& f) {
    for (const auto& [id, c] : containers_)
      if (c->scope && (c->scope->number() == f.scope || c->judged_from_creation == f.scope)) {
        c->session->say_kernel_refusal(f);
        return;
      }
    std::string whose;
    for (const auto& [cg, p] : pending_)
      if (p.scope->number() == f.scope)
        whose =
            "of container " + printable(p.id) + ", judged from its creation, before its handover";
    // A container an earlier agent judged (pinned), not adopted again yet.
    if (whose.empty())
      whose = "of a container an earlier agent judged (scope " + std::to_string(f.scope) + ")";
    char line[160];
    std::snprintf(line, sizeof line,
                  "BPF LSM judge refused ioctl 0x%08x on char device %u:%u by pid %d (ns pid %d, ",
                  f.request, major(f.rdev), minor(f.rdev), f.tid, f.ns_tid);
    log(line + printable(f.comm) + ") " + whose + " -> EPERM");
  }

  // Whether every request `profile` lets run untrapped is in `allowed` (the session's own set);
  // `why` names the first that is not.
  static bool untrapped_agrees(const ProfileUntrapped& profile,
                               const std::vector<uint32_t>& allowed, std::string& why) {
    if (profile.unjudged) {
      why = "its profile's " + *profile.unjudged + ", which the agent cannot judge";
      return false;
    }
    for (const uint32_t r : profile.requests)
      if (!std::binary_search(allowed.begin(), allowed.end(), r)) {
        char hex[16];
        std::snprintf(hex, sizeof hex, "0x%x", r);
        why = std::string("its profile lets ioctl ") + hex +
              " run untrapped, which its rule's policy, mode and trace do not allow unread";
        return false;
      }
    return true;
  }

  // A process whose profile lets calls run untrapped that its container may not make: its
  // listener alone would not stop them, so it is killed (a container's init: the container).
  void kill_refused(int pidfd, const std::string& who, const std::string& why) {
    const bool killed = ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0) == 0;
    log(who + " refused: " + why + (killed ? " (killed)" : " (could not be killed: it exited)"));
  }

  void drop(const std::string& id) {
    auto it = containers_.find(id);
    if (it == containers_.end() || !it->second->session->ended()) return;
    // What the judge refused for it last is said by its session, before that ends.
    if (judge_refusals_) judge_refusals_->take();
    // An ended session's thread has nothing left to wait for: it stops at once.
    if (!it->second->session->stop()) return;
    // Its last results may still wait in the observer's ring: taken first, or its last calls
    // would be recorded as never returned.
    engine_.drain_observer();
    it->second->session->finish("the container exited before the call returned");
    {
      std::lock_guard<std::mutex> lock(groups_mu_);
      std::erase_if(group_members_, [&id](const auto& m) { return m.second.first == id; });
    }
    const SessionStats s = it->second->session->stats();
    char lat[64];
    std::snprintf(lat, sizeof lat, ", handler p50 %.1f us, p99 %.1f us", double(s.p50_ns) / 1e3,
                  double(s.p99_ns) / 1e3);
    log("container " + id + " ended: " + std::to_string(s.ioctls) + " ioctl, " +
        std::to_string(s.opens) + " open, " + std::to_string(s.denied) + " denied" +
        (it->second->scope ? ", " + std::to_string(s.kernel_refused) + " refused in the kernel"
                           : "") +
        lat);
    // Its fd-store entries went when their processes exited: the holder drops them itself.
    if (store_) store_->forget_copies_of(id);
    containers_.erase(it);
    if (draining_ && containers_.empty()) {
      log("drained: the last container ended, stopping");
      engine_.io().stop();
    }
  }

  // The fd-store holder, checked each second: one that was killed is replaced, with every live
  // process's entry, so that the next restart of the agent still finds them.
  void watch_holder() {
    if (!store_) return;
    holder_timer_.expires_after(std::chrono::seconds(1));
    holder_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      check_holder();
      watch_holder();
    });
  }
  void check_holder() {
    try {
      if (const auto n = store_->replace_holder_if_gone()) {
        log("fd store " + store_->path() + ": its holder was gone: a new one keeps the " +
            std::to_string(*n) + " live process(es) again");
        if (!subscription_) serve_runtimes();
      }
    } catch (const std::exception& e) {
      log("fd store " + store_->path() + ": its holder is gone and no new one starts (" + e.what() +
          "); tried again in 1 s");
    }
  }

  // A control connection: one short command line, read asynchronously within the handshake
  // deadline, answered (written asynchronously, within the same deadline) and closed.
  void on_ctl(local::socket s) {
    const auto cred = peer_credentials(s.native_handle());
    if (!cred || cred->uid != 0) return;
    auto cmd = std::make_shared<std::string>();
    ctl_handshakes_.add(
        std::move(s),
        [this, cmd](int fd) -> std::optional<std::string> {
          char buf[256];
          for (;;) {
            const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return std::nullopt;
            if (n < 0) return std::string();
            cmd->append(buf, static_cast<size_t>(n));
            if (n == 0 || cmd->find('\n') != std::string::npos || cmd->size() >= 256) break;
          }
          std::string line = cmd->substr(0, cmd->find('\n'));
          while (!line.empty() && line.back() == ' ') line.pop_back();
          return ctl_answer(line);
        },
        [this](const std::string& why) { log("a control connection " + why); });
  }

  // The answer to one `ctl` command (empty: nothing to say).
  std::string ctl_answer(const std::string& cmd) {
    std::string out;
    if (cmd == "list" || cmd == "stats") {
      for (const auto& [id, c] : containers_) {
        nlohmann::json j;
        j["id"] = id;
        if (cmd == "list") {
          j["pid"] = c->pid;
          j["pidns"] = c->pidns;
          j["cgroup"] = c->cgroup;
          j["status"] = c->status;
          j["bundle"] = c->bundle;
          j["rule"] = c->rule;
          j["grants"] = c->grants;
          j["mode"] = c->mode == Mode::kEnforce ? "enforce" : "trace";
          j["listeners"] = c->listeners;
          j["draining"] = c->draining || draining_;
          if (judge_) j["judged_in_kernel"] = c->scope ? "cgroup" : c->judged;
        } else {
          const SessionStats s = c->session->stats();
          j["ioctls"] = s.ioctls;
          j["opens"] = s.opens;
          j["brokered"] = s.brokered;
          j["denied"] = s.denied;
          if (c->scope) j["kernel_refused"] = s.kernel_refused;
          j["handler_faults"] = s.handler_faults;
          j["allowed_unread"] = s.allowed_unread;
          j["trap_copies_used"] = s.trap_copies_used;
          j["trap_copies_missed"] = s.trap_copies_missed;
          j["trap_copies_torn"] = s.trap_copies_torn;
          j["observer_lost"] = s.observer_lost;
          j["observer_skipped"] = s.observer_skipped;
          j["results_unobserved"] = s.results_unobserved;
          j["fds_watched"] = s.fds_watched;
          j["fds_unwatched_gone"] = s.fds_unwatched_gone;
          j["us_per_ioctl"] = s.ioctl_phase_samples
                                  ? double(s.ns_ioctl) / 1e3 / double(s.ioctl_phase_samples)
                                  : 0.0;
          j["us_per_open"] = s.opens ? double(s.ns_open) / 1e3 / double(s.opens) : 0.0;
          {
            // Where an ioctl's handling time goes (us per ioctl, over the sampled calls).
            const auto us = [&](uint64_t ns) {
              return s.ioctl_phase_samples ? double(ns) / 1e3 / double(s.ioctl_phase_samples) : 0.0;
            };
            const SessionStats::IoctlPhases& ph = s.ioctl_ns;
            j["us_per_ioctl_phases"] = {{"lookup", us(ph.lookup)}, {"memory", us(ph.memory)},
                                        {"decode", us(ph.decode)}, {"policy", us(ph.policy)},
                                        {"answer", us(ph.answer)}, {"trace", us(ph.trace)}};
          }
          j["p50_us"] = double(s.p50_ns) / 1e3;
          j["p99_us"] = double(s.p99_ns) / 1e3;
          j["deadline_failures"] = s.deadline_failures;
          j["degraded"] = s.degraded;
          j["stuck"] = s.stuck;
        }
        out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      }
    } else if (cmd.rfind("judge-pending ", 0) == 0) {
      out = judge_pending(cmd.substr(14));
    } else if (cmd == "drain") {
      draining_ = true;
      log("draining: no new container or process is taken; stopping when the last of " +
          std::to_string(containers_.size()) + " container(s) ends");
      out = "{\"draining\":true,\"containers\":" + std::to_string(containers_.size()) + "}\n";
      if (containers_.empty()) engine_.io().stop();
    } else if (cmd.rfind("drain ", 0) == 0) {
      const std::string id = cmd.substr(6);
      auto it = containers_.find(id);
      if (it == containers_.end()) {
        out = "{\"error\":\"no such container\"}\n";
      } else {
        it->second->draining = true;
        log("container " + id + ": draining (no new process joins it)");
        out = "{\"draining\":true,\"id\":" +
              nlohmann::json(id).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
              "}\n";
      }
    } else {
      out =
          "{\"error\":\"unknown command; expected list, stats, drain, drain ID or judge-pending "
          "PID ID\"}\n";
    }
    return out;
  }

  const AgentOptions& opts_;
  AgentConfig config_;
  Engine engine_;
  // The previous agent was killed and cannot finish exiting (a thread of it blocked in the
  // kernel, most likely inside a call's handling): the calls it had received are then failed,
  // not handled again (received_ids.h).
  bool previous_agent_stuck_ = false;
  local::acceptor ctl_;
  std::optional<FdStoreClient> store_;
  local::acceptor acceptor_;
  asio::signal_set signals_;
  // Bundles being read, off the loop: as long as a handshake may take, a few stuck at most.
  BundleReads bundle_reads_{engine_.io(), std::chrono::milliseconds(opts_.handshake_deadline_ms),
                            kMaxStuckBundleReads};
  // The connections being read, runtimes' and control's apart (neither crowds out the other).
  Handshakes handshakes_;
  Handshakes ctl_handshakes_;
  // The BPF LSM judge of every container's ioctls (--lsm), its refusals said by their sessions
  // (before the containers: each forgets its scope in it when it goes).
  std::unique_ptr<IoctlLsm> judge_;
  std::optional<LsmRefusals> judge_refusals_;
  asio::steady_timer judge_sweep_{engine_.io()};
  uint32_t last_scope_ = 0;
  bool other_judges_left_ = false;  // judges of other builds pinned beside ours, still judging
  // Containers judged from their creation, not handed over yet, by their cgroup's id (declared
  // after the judge: each forgets its scope in it when it goes).
  std::map<uint64_t, PendingJudgement> pending_;
  std::map<std::string, std::unique_ptr<Container>> containers_;
  // Each pidfd_getfd group's live containers and their pid namespaces: read from the sessions'
  // threads (the peer check), written on the loop.
  std::mutex groups_mu_;
  std::multimap<std::string, std::pair<std::string, ino_t>> group_members_;
  asio::steady_timer holder_timer_{engine_.io()};
  // The holder accepting runtimes for this agent (serve_runtimes), or this agent accepting them.
  std::optional<asio::posix::stream_descriptor> subscription_;
  bool self_accepting_ = false;
  bool draining_ = false;  // `ctl drain`: no new container or process; stop when none is left
};

}  // namespace

int run_agent(const AgentOptions& o) {
  if (!in_initial_pid_namespace())
    throw Error(
        "gdrproxy agent must run in the initial pid namespace (seccomp and the BPF observer "
        "report host pids); run it on the host, not in a container");
  AgentConfig config = o.config ? AgentConfig::load_file(*o.config)
                                : AgentConfig::from_json_text("{\"version\": 1}", "(no --config)");
  if (o.trace_dir) {
    struct stat st;
    if (::stat(o.trace_dir->c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw Error("--trace-dir " + *o.trace_dir + " is not a directory");
  }
  Agent agent(o, std::move(config));
  return agent.run();
}

int agent_ctl(const std::string& ctl_socket, const std::string& command) {
  try {
    const std::string answer =
        ask_unix_socket(ctl_socket, "the agent's control socket", command, 30000);
    std::fwrite(answer.data(), 1, answer.size(), stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gdrproxy agent ctl: %s\n", e.what());
    return 1;
  }
}

}  // namespace gdrproxy::proxy
