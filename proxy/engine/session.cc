// The Session's threads and lifetime. Each listener's receiver thread waits in RECV and has the
// call handler decide what it receives, under the session's mutex, inside an exception boundary:
// whatever a tenant's bytes make the handler throw, that call is failed closed (EPERM), one line
// says why, and the session keeps serving. Every notification is answered exactly once: CONTINUE,
// an error, or an injected fd, by its receiver (carrying out the handler's decision) or, past the
// deadline, by the engine's watchdog, whichever claims it first. What a call means and whether it
// runs is the handler's (call_handler.h); how it is shown, the trace's (session_trace.h).
#include "proxy/engine/session.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <utility>

#include "base/error.h"
#include "base/escape.h"
#include "base/hot_path.h"
#include "proxy/engine/clock.h"
#include "proxy/engine/seccomp_notify.h"
#include "proxy/engine/session_setup.h"

namespace gdrproxy::proxy {
namespace {

namespace asio = boost::asio;

// Up to this many CPUs the synchronous wake-up flag is on by default.
constexpr long kSyncWakeupMaxCpus = 4;

// The signal that interrupts a receiver's RECV when it is to leave: unblocked in the receivers
// alone, with a handler that does nothing (RECV then returns EINTR), installed once.
int release_signal() {
  return SIGRTMIN + 3;
}
void install_release_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = [](int) {};
    sigemptyset(&sa.sa_mask);
    ::sigaction(release_signal(), &sa, nullptr);  // no SA_RESTART: RECV must return
  });
}

// A trace file added to (SessionConfig::trace_append) whose last line its previous writer left
// unfinished (killed mid-write) is ended, so that the next record starts a line of its own. `fd`
// is open for reading too.
void end_unfinished_line(int fd) {
  struct stat st {};
  char last = '\n';
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      ::pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n')
    static_cast<void>(::write(fd, "\n", 1));
}

// No task uses the listener's filter any more (and no notification is left on it).
bool listener_hung_up(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLHUP) && !(p.revents & POLLIN);
}

}  // namespace

Session::Session(Engine& engine, SessionConfig config)
    : engine_(engine),
      config_(std::move(config)),
      tracing_(config_.trace_text || config_.trace_json),
      catalog_held_(engine.current_catalog()),
      catalog_(*catalog_held_),
      log_prefix_(config_.name.empty() ? "gdrproxy: "
                                       : "gdrproxy: [" + printable(config_.name) + "] "),
      inputs_(catalog_, engine.live_catalog(), config_.grants, config_.policy.open_errno(),
              engine.nvidia()),
      release_timer_(io_),
      watchdog_(inflight_, config_.blocking_deadline_ms, log_prefix_, ended_),
      sweep_(io_) {
  UniqueFd hangups(::epoll_create1(EPOLL_CLOEXEC));
  if (!hangups) throw_errno("cannot create the epoll set that sees listeners hang up", errno);
  hangups_ = std::make_unique<asio::posix::stream_descriptor>(io_, hangups.release());
  std::unique_ptr<JsonTraceWriter> json;
  if (config_.trace_json) {
    UniqueFd f(::open(
        config_.trace_json->c_str(),
        O_CREAT | O_CLOEXEC | (config_.trace_append ? O_RDWR | O_APPEND : O_WRONLY | O_TRUNC),
        0666));
    if (!f) throw_errno("cannot write trace file " + *config_.trace_json, errno);
    if (config_.trace_append) end_unfinished_line(f.get());
    json = std::make_unique<JsonTraceWriter>(std::move(f));
  }
  set_up(std::move(json));
  arm_sweep();
  watch_hangups();
  id_ = engine_.attach(this);  // last: a constructor that throws leaves no route behind
  trace_->set_session_id(id_);
  if (config_.unconfined) record_unconfined(*config_.unconfined);
}

void Session::record_unconfined(const std::string& why) {
  // Said even when quiet, as denial lines are: the operator must see it.
  std::fprintf(stderr,
               "%swarning: serving an unconfined container (%s), accepted by the operator: it "
               "can undo every guard on its devices\n",
               log_prefix_.c_str(), printable(why).c_str());
  if (!tracing_) return;
  TraceRecord r;
  r.seq = engine_.next_seq();
  r.wall_time = wall_seconds();
  r.syscall = "start";
  r.decision = "unconfined";
  r.reason = "accepted by the operator: " + why;
  std::lock_guard<std::mutex> lock(mu_);
  trace_->emit(std::move(r));
}

void Session::set_up(std::unique_ptr<JsonTraceWriter> json) {
  std::string said;
  enforcement_ = enforcement_for(config_, engine_.nvidia(), catalog_, said);
  if (!said.empty()) note(said);
  said.clear();
  judgement_ =
      kernel_judgement_for(config_, engine_.nvidia(), catalog_, tracing_, enforcement_, said);
  if (!said.empty()) note(said);
  // The judge's refusals are said after the call (the caller has its EPERM already).
  if (judgement_.lsm)
    lsm_refusals_.emplace(io_, *judgement_.lsm, &mu_,
                          [this](const IoctlLsm::Refusal& f) { say_kernel_refusal_locked(f); });
  ExitObserver* observer = nullptr;
  if (tracing_) {
    std::string why;
    observer = engine_.observer(why);
    if (!observer) note("results of allowed calls will not be shown (" + why + ")");
  }
  handler_.emplace(handler_setup(config_, engine_, catalog_, enforcement_, judgement_, tracing_,
                                 observer != nullptr),
                   inputs_.inputs());
  trace_.emplace(config_.trace_text, std::move(json), observer, inputs_, inputs_, *handler_,
                 log_prefix_, [&engine = engine_] { return engine.next_seq(); });
}

void Session::say_kernel_refusal(const IoctlLsm::Refusal& f) {
  std::lock_guard<std::mutex> lock(mu_);
  say_kernel_refusal_locked(f);
}

void Session::say_kernel_refusal_locked(const IoctlLsm::Refusal& f) {
  ++stats_.kernel_refused;
  TraceRecord r;
  const DeviceNode* node = inputs_.device(f.rdev);
  if (CallMetrics* m = config_.metrics.get())
    m->refused(node ? call_class(node->device_class) : kNoDeviceClass, DenialReason::kKernelJudge);
  const std::string line = lsm_refusal(f, node, lsm_said_, r);
  if (!line.empty()) std::fprintf(stderr, "%s%s\n", log_prefix_.c_str(), line.c_str());
  if (!tracing_) return;
  r.seq = engine_.next_seq();
  r.wall_time = wall_seconds();
  trace_->emit(std::move(r));
}

void Session::judge_in_kernel(pid_t pid) {
  if (judgement_.lsm) judgement_.lsm->judge_task(pid, kSessionScope);
}

Session::~Session() {
  // Owners never destroy a stuck session (the agent leaves it to the process's exit); should one
  // be, its thread is let go rather than terminating the process.
  if (!stop()) {
    thread_.detach();
    for (auto& l : listeners_)
      if (l->receiver.joinable()) l->receiver.detach();
  }
  finish("the session ended before the call returned");
  engine_.forget(this);
}

template <typename Send>
GDRPROXY_HOT int Session::answer(Send send) {
  const uint64_t t0 = phases_ ? monotonic_ns() : 0;
  answered_ = true;
  const int rc = inflight_.claim() ? send() : -ETIMEDOUT;
  if (phases_) phases_->answer += monotonic_ns() - t0;
  return rc;
}

GDRPROXY_HOT int Session::answer_continue(uint64_t id) {
  return answer([&] { return notif_continue(nfd_, id); });
}

int Session::answer_error(uint64_t id, int err) {
  return answer([&] { return notif_error(nfd_, id, err); });
}

int Session::answer_fd(uint64_t id, int srcfd, bool cloexec) {
  return answer([&] { return notif_inject_fd(nfd_, id, srcfd, cloexec); });
}

void Session::note(const std::string& msg) const {
  if (!config_.quiet) std::fprintf(stderr, "%s%s\n", log_prefix_.c_str(), printable(msg).c_str());
}

void Session::add_listener(int listener_fd, ReceivedIdPage ids) {
  add_unbound_listener(listener_fd, std::move(ids), nullptr);
}

void Session::add_unbound_listener(int listener_fd, ReceivedIdPage ids, BindCheck bind) {
  if (thread_.joinable()) {
    auto page = std::make_shared<ReceivedIdPage>(std::move(ids));
    asio::post(io_, [this, listener_fd, page, bind = std::move(bind)]() mutable {
      try {
        add_listener_here(listener_fd, std::move(*page), std::move(bind));
      } catch (const Error& e) {
        // Said even when quiet: a process of the sandbox is left without its device calls.
        std::fprintf(stderr, "%s%s\n", log_prefix_.c_str(), printable(e.what()).c_str());
      }
    });
    return;
  }
  add_listener_here(listener_fd, std::move(ids), std::move(bind));
  work_.emplace(io_.get_executor());
  thread_ = std::thread([this] {
    // Signals are the engine loop's to take, never this thread's: a signal must not interrupt a
    // call the thread is blocked in (a FUSE request would then be abandoned half-way).
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    // Named for ps, top, perf and gdb: the thread of the session's results, timers and hang-ups.
    pthread_setname_np(pthread_self(), "gdrproxy-sess");
    for (;;) {
      try {
        io_.run();
        return;
      } catch (const std::exception& e) {
        note(std::string("internal error in the session's loop, serving on: ") + e.what());
      }
    }
  });
  watchdog_.start(engine_.io());
}

void Session::add_listener_here(int listener_fd, ReceivedIdPage ids, BindCheck bind) {
  auto l = std::make_unique<Listener>();
  l->fd = UniqueFd(listener_fd);
  l->ids = std::move(ids);
  l->bind = std::move(bind);
  l->recv_buf.resize((engine_.notif_size() + 7) / 8);
  // Synchronous wake-ups cut a round trip from ~50 us to ~6 us on 2-vCPU VMs (kernel >= 6.6),
  // but on many-core hosts they move every caller onto the supervisor's CPU (docs/PERFORMANCE.md).
  const bool sync =
      config_.sync_wakeup.value_or(::sysconf(_SC_NPROCESSORS_ONLN) <= kSyncWakeupMaxCpus);
  if (sync &&
      ::ioctl(listener_fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 0) !=
          0 &&
      tracing())
    note("synchronous wake-up not supported by this kernel (slower round trips)");
  epoll_event ev{};  // no events: a hang-up and an error are reported whatever is asked
  ev.data.ptr = l.get();
  if (::epoll_ctl(hangups_->native_handle(), EPOLL_CTL_ADD, listener_fd, &ev) != 0)
    throw_errno("cannot watch a seccomp listener for its hang-up (its calls fail with ENOSYS)",
                errno);
  install_release_handler();
  Listener& added = *l;
  try {
    added.receiver = std::thread([this, &added] { receive(added); });
  } catch (const std::system_error& e) {
    ::epoll_ctl(hangups_->native_handle(), EPOLL_CTL_DEL, listener_fd, nullptr);
    throw Error(std::string("no thread to receive a seccomp listener's calls (") + e.what() +
                "): it is closed, its calls fail with ENOSYS");
  }
  listeners_.push_back(std::move(l));
  listened_ = true;
}

// The caller's round trip is RECV's wake-up, this handling, and the answer: nothing waits before
// RECV (an event loop's epoll and poll would be two more syscalls a call, some 10 % of the trip).
GDRPROXY_HOT void Session::receive(Listener& l) {
  // Only the release signal reaches this thread (its other signals are the engine loop's).
  sigset_t others;
  sigfillset(&others);
  sigdelset(&others, release_signal());
  pthread_sigmask(SIG_SETMASK, &others, nullptr);
  pthread_setname_np(pthread_self(), "gdrproxy-recv");  // for ps, top, perf and gdb
  bool said = false;
  if (l.ids.recovering()) {
    handle_stranded(l);
    answer_stranded(l, std::nullopt);
  }
  while (!l.leave.load(std::memory_order_acquire)) {
    try {
      // Zeroed before each RECV, as the kernel requires; as large as the kernel's struct. With a
      // received-id page, RECV writes into the page itself (received_ids.h): the previous call
      // is answered by now, and the kernel puts the new id there before RECV returns.
      void* page = l.ids ? l.ids.recv_buffer(engine_.notif_size()) : nullptr;
      void* buf = page ? page : l.recv_buf.data();
      std::memset(buf, 0, page ? engine_.notif_size() : l.recv_buf.size() * 8);
      auto& req = *static_cast<seccomp_notif*>(buf);
      if (::ioctl(l.fd.get(), SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
        // EINTR: the release signal (leave is set) or a stray one.
        if (errno == EINTR) continue;
        // ENOENT: the caller died between the wake-up and the receipt, or (kernels whose RECV
        // waits on the listener's wait queue, 6.6 on) no task uses the filter any more, and
        // every RECV from now on returns at once: this receiver is done, not a spinning one.
        if (errno == ENOENT) {
          if (listener_hung_up(l.fd.get())) break;
          continue;
        }
        // Not a seccomp listener (ENOTTY), or no fd at all (EBADF): no call will ever come, and
        // retrying would spin. The receiver ends and its listener counts as hung up, so the
        // session can end.
        if (errno == ENOTTY || errno == EBADF) {
          note(std::string("SECCOMP_IOCTL_NOTIF_RECV: ") + std::strerror(errno) +
               ": not a seccomp listener, its receiver ends");
          asio::post(io_, [this, &l] {
            hang_up(l);
            check_end();
            forget_hung_up_listeners();
          });
          break;
        }
        if (!std::exchange(said, true))
          note(std::string("SECCOMP_IOCTL_NOTIF_RECV: ") + std::strerror(errno) +
               " (retrying every 10 ms)");
        ::usleep(10000);
        continue;
      }
      if (l.ids) {
        if (!page) l.ids.received(req.id);
        if (l.ids.recovering()) answer_stranded(l, req.id);
      }
      if ((l.bind || l.refused) && !bound(l, req)) continue;
      handle_from(l, req);
    } catch (const std::exception& e) {
      note(std::string("internal error in a receiver, serving on: ") + e.what());
    }
  }
  l.done.store(true, std::memory_order_release);
}

// Only a listener's first caller is checked: the filter is inherited by the children it forks
// later, and the runtime gave the listener to that process alone.
bool Session::bound(Listener& l, const seccomp_notif& req) {
  if (l.bind) {
    std::string why;
    try {
      why = l.bind(static_cast<pid_t>(req.pid), l.fd.get(), req.id);
    } catch (const std::exception& e) {
      why = std::string("its first caller could not be checked: ") + e.what();
    }
    l.bind = nullptr;
    if (!why.empty()) {
      l.refused = true;
      // Said even when quiet: a process is left without its device calls.
      std::fprintf(stderr, "%s%s\n", log_prefix_.c_str(),
                   printable("a listener its runtime did not name a process for is refused: " +
                             why + " (its calls fail with ENOSYS)")
                       .c_str());
    }
  }
  if (!l.refused) return true;
  notif_error(l.fd.get(), req.id, ENOSYS);
  return false;
}

// One call, received on `l`, handled under the session's lock.
GDRPROXY_HOT void Session::handle_from(Listener& l, seccomp_notif& req) {
  std::lock_guard<std::mutex> lock(mu_);
  nfd_ = l.fd.get();
  inputs_.set_listener(nfd_);
  handle(req);
}

// Before the first RECV: the call a killed agent had received on this listener and not answered,
// handled as if just received (received_ids.h says when that is safe), and said.
void Session::handle_stranded(Listener& l) {
  auto copy = l.ids.take_stranded(l.fd.get(), engine_.notif_size());
  if (!copy) return;
  auto& req = *reinterpret_cast<seccomp_notif*>(copy->data());
  note("handling again a call a killed agent had received and not answered: pid " +
       std::to_string(req.pid) + ", syscall " + std::to_string(req.data.nr));
  try {
    handle_from(l, req);
  } catch (const std::exception& e) {
    note(std::string("internal error while handling it again (it is answered ") +
         std::strerror(kStrandedErrno) + "): " + e.what());
  }
}

// Before the first RECV (no `first`) and before the first call received is handled: the
// calls a killed agent had received on this listener are answered (kStrandedErrno), and said.
void Session::answer_stranded(Listener& l, std::optional<uint64_t> first) {
  const unsigned n = first ? l.ids.probe_below(l.fd.get(), *first) : l.ids.probe(l.fd.get());
  if (n > 0)
    note("answered " + std::to_string(n) +
         " call(s) a killed agent had received and not answered (" + std::strerror(kStrandedErrno) +
         ")");
}

void Session::watch_hangups() {
  hangups_->async_wait(asio::posix::stream_descriptor::wait_read,
                       [this](const boost::system::error_code& ec) {
                         if (ec) return;
                         epoll_event ev[16];
                         int n;
                         do {
                           n = ::epoll_wait(hangups_->native_handle(), ev, 16, 0);
                           for (int i = 0; i < n; ++i)
                             hang_up(*static_cast<Listener*>(ev[i].data.ptr));
                         } while (n == 16);
                         check_end();
                         forget_hung_up_listeners();
                         watch_hangups();
                       });
}

// No task uses the listener's filter any more: no call will come, and its receiver leaves.
void Session::hang_up(Listener& l) {
  if (l.hung_up) return;
  l.hung_up = true;
  ::epoll_ctl(hangups_->native_handle(), EPOLL_CTL_DEL, l.fd.get(), nullptr);
  l.leave.store(true, std::memory_order_release);
  release_receivers();
}

// A receiver told to leave may be between its check of `leave` and its RECV when the signal
// comes (then RECV blocks anyway), or busy with a call: the signal is repeated until it has left,
// at 1 ms, then backing off to 1 s (each signal to a call waiting on a FUSE server sends that
// server an interrupt request).
void Session::release_receivers() {
  bool waiting = false;
  for (auto& l : listeners_) {
    if (!l->leave.load(std::memory_order_acquire) || !l->receiver.joinable()) continue;
    if (l->done.load(std::memory_order_acquire)) {
      l->receiver.join();
      continue;
    }
    ::pthread_kill(l->receiver.native_handle(), release_signal());
    waiting = true;
  }
  if (!waiting) {
    release_delay_ = std::chrono::milliseconds(1);
    if (stopped_) std::exchange(stopped_, nullptr)->set_value();
    return;
  }
  release_timer_.expires_after(release_delay_);
  release_delay_ = std::min(release_delay_ * 2, std::chrono::milliseconds(1000));
  release_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    release_receivers();
    forget_hung_up_listeners();
  });
}

// A hung-up listener whose receiver has left is closed: a long-lived container whose runtime
// execs a process every few seconds (a liveness probe) would otherwise keep an fd and its filter
// for each one until it stops.
void Session::forget_hung_up_listeners() {
  std::erase_if(listeners_, [](const std::unique_ptr<Listener>& l) {
    return l->hung_up && !l->receiver.joinable();
  });
}

bool Session::stop() {
  if (!thread_.joinable()) return true;
  if (inflight_.stuck()) return false;
  // Nothing new is received or waited for; what is queued (delivered results) still runs, then
  // run() returns.
  auto stopped = std::make_shared<std::promise<void>>();
  std::future<void> done = stopped->get_future();
  asio::post(io_, [this, stopped] {
    hangups_->cancel();
    if (init_) init_->cancel();
    if (lsm_refusals_) lsm_refusals_->cancel();
    sweep_.cancel();
    for (auto& l : listeners_) l->leave.store(true, std::memory_order_release);
    stopped_ = stopped;
    release_receivers();
  });
  // A call in progress has until its deadline (the loop's watchdog is not running now).
  while (done.wait_for(std::chrono::milliseconds(5)) != std::future_status::ready) {
    watchdog_.tick();
    if (inflight_.stuck()) return false;
  }
  work_.reset();
  thread_.join();
  // The loop has stopped: what the judge refused last is said now.
  if (lsm_refusals_) lsm_refusals_->take();
  watchdog_.cancel();
  return true;
}

void Session::deliver(std::vector<gdrproxy_exit_event>&& events) {
  if (thread_.joinable()) {
    asio::post(io_, [this, batch = std::move(events)] {
      for (const gdrproxy_exit_event& e : batch) on_exit_event(e);
    });
    return;
  }
  for (const gdrproxy_exit_event& e : events) on_exit_event(e);
}

// A call's result (on the loop, without mu_: it touches only its claimed entry and what is the
// loop's own) or a watched write (under mu_: its fd lookup and denial lines are the receivers').
void Session::on_exit_event(const gdrproxy_exit_event& e) {
  if (e.kind != GDRPROXY_EVENT_CM_WRITE) return trace_->on_result(e);
  std::lock_guard<std::mutex> lock(mu_);
  trace_->on_write(e);
}

void Session::watch_init(int pidfd) {
  init_ = std::make_unique<asio::posix::stream_descriptor>(io_, pidfd);
}

void Session::check_end() {
  if (ended_) return;
  for (auto& l : listeners_) {
    // Also seen here (the sweep's turn) should the hang-ups' wake-up be missed.
    if (!l->hung_up && listener_hung_up(l->fd.get())) hang_up(*l);
    if (!l->hung_up) return;
  }
  if (!listened_) return;
  // Every filter's last task is gone; a readable pidfd says the init process is too (it may be
  // a zombie a moment longer than its listener: wait for it, never for the listeners again).
  if (init_ && !init_exited_) {
    pollfd p{init_->native_handle(), POLLIN, 0};
    if (::poll(&p, 1, 0) != 1) {
      init_->async_wait(asio::posix::stream_descriptor::wait_read,
                        [this](const boost::system::error_code& ec) {
                          if (ec) return;
                          init_exited_ = true;
                          check_end();
                        });
      return;
    }
    init_exited_ = true;
  }
  ended_ = true;
  sweep_.cancel();
  if (on_end_) asio::post(engine_.io(), on_end_);
}

void Session::arm_sweep() {
  sweep_.expires_after(std::chrono::seconds(1));
  sweep_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    std::lock_guard<std::mutex> lock(mu_);
    trace_->sweep();
    // A refusal whose wake-up was skipped (the judge wakes once per batch) waits at most a sweep.
    if (lsm_refusals_) lsm_refusals_->take();
    check_end();
    if (!ended_) arm_sweep();
  });
}

SessionStats Session::stats() {
  if (thread_.joinable()) {
    auto p = std::make_shared<std::promise<SessionStats>>();
    std::future<SessionStats> f = p->get_future();
    asio::post(io_, [this, p] {
      std::lock_guard<std::mutex> lock(mu_);
      p->set_value(stats_here());
    });
    if (f.wait_for(std::chrono::milliseconds(500)) == std::future_status::ready) return f.get();
    // Stuck in a call: what the watchdog knows.
    SessionStats s;
    s.deadline_failures = watchdog_.failures();
    s.degraded = watchdog_.degraded();
    s.stuck = true;
    return s;
  }
  return stats_here();
}

uint64_t Session::trace_bytes() const {
  return trace_ ? trace_->json_bytes() : 0;
}

SessionStats Session::stats_here() const {
  SessionStats s = stats_;
  handler_->add_counts(s);
  trace_->add_counts(s);
  s.deadline_failures = watchdog_.failures();
  s.degraded = watchdog_.degraded();
  s.stuck = inflight_.stuck();
  s.p50_ns = latency_.quantile_ns(0.5);
  s.p99_ns = latency_.quantile_ns(0.99);
  return s;
}

void Session::print_summary(bool with_stats) const {
  SummaryFacts f{log_prefix_,       config_.quiet,
                 tracing_,          trace_->observer() != nullptr,
                 trace_->dropped(), config_.trace_json.value_or(""),
                 std::nullopt,      judgement_.allowed};
  if (judgement_.lsm) f.lsm = judgement_.lsm->counts();
  proxy::print_summary(stats_here(), f, with_stats);
}

GDRPROXY_HOT void Session::handle(const seccomp_notif& req) {
  // One ioctl in kPhaseSampleEvery is timed, in total and phase by phase: a clock read costs
  // 20-50 ns, which adds up on the enforce fast path.
  const bool sampled = req.data.nr == SYS_ioctl && stats_.ioctls % kPhaseSampleEvery == 0;
  // Every call's start is read, for the watchdog's deadline, for which the coarse clock (the last
  // tick's time: no clock-source read) does. The precise clock is read where a latency is
  // measured from the start: a traced call, an open, a timed ioctl.
  const bool timed = sampled || tracing_ || req.data.nr != SYS_ioctl;
  const uint64_t t0 = timed ? monotonic_ns() : coarse_monotonic_ns();
  answered_ = false;
  inflight_.publish({nfd_, req.id, t0, req.pid, static_cast<int>(req.data.nr)});
  try {
    dispatch(req, t0, sampled);
  } catch (const std::exception& e) {
    ++stats_.handler_faults;
    if (CallMetrics* m = config_.metrics.get())
      m->refused(kNoDeviceClass, DenialReason::kHandlerFault);
    std::fprintf(stderr, "%sinternal error handling %s of pid %llu, failed closed: %s\n",
                 log_prefix_.c_str(), req.data.nr == SYS_ioctl ? "an ioctl" : "an open",
                 static_cast<unsigned long long>(req.pid), printable(e.what()).c_str());
  } catch (...) {
    ++stats_.handler_faults;
    if (CallMetrics* m = config_.metrics.get())
      m->refused(kNoDeviceClass, DenialReason::kHandlerFault);
    std::fprintf(stderr, "%sinternal error handling a call of pid %llu, failed closed\n",
                 log_prefix_.c_str(), static_cast<unsigned long long>(req.pid));
  }
  // Never leave a caller blocked: whatever path was taken, the notification gets an answer, and
  // the answer closed it (claim()) for the watchdog.
  if (!answered_) answer_error(req.id, EPERM);
  // Back from whatever blocked: the session is no longer stuck (it stays degraded).
  inflight_.finish();
}

uint64_t Session::record_latency(uint64_t& total_ns, uint64_t t0) {
  const uint64_t ns = monotonic_ns() - t0;
  total_ns += ns;
  latency_.record(ns);
  return ns;
}

GDRPROXY_HOT void Session::dispatch(const seccomp_notif& req, uint64_t t0, bool sampled) {
  switch (req.data.nr) {
    case SYS_ioctl: {
      ++stats_.ioctls;
      phases_ = sampled ? &stats_.ioctl_ns : nullptr;
      struct Reset {
        IoctlPhases*& p;
        ~Reset() { p = nullptr; }
      } reset{phases_};
      const IoctlPhases before = stats_.ioctl_ns;
      IoctlNotification n{req, t0};
      n.phases = phases_;
      if (const TrapCopies* copies = engine_.trap_copies()) {
        n.copies = true;
        n.copy = copies->take(req);
      }
      CallDecision d = handler_->ioctl(std::move(n));
      carry_out(req, d, t0);
      CallMetrics* const m = config_.metrics.get();
      if (!sampled) {
        if (m) m->count(d.call_class, d.denial, false, 0);
        return;
      }
      ++stats_.ioctl_phase_samples;
      const uint64_t ns = record_latency(stats_.ns_ioctl, t0);
      charge_trace(stats_.ioctl_ns, before, ns);
      if (m) m->count(d.call_class, d.denial, true, ns);
      return;
    }
    case SYS_open:
    case SYS_openat:
    case SYS_openat2:
    case SYS_creat: {
      ++stats_.opens;
      CallDecision d = handler_->open(req);
      carry_out(req, d, t0);
      const uint64_t ns = record_latency(stats_.ns_open, t0);
      if (CallMetrics* m = config_.metrics.get()) m->count(d.call_class, d.denial, true, ns);
      return;
    }
    case SYS_pidfd_getfd: {
      CallDecision d = handler_->pidfd_getfd(req);
      carry_out(req, d, t0);
      if (CallMetrics* m = config_.metrics.get()) m->count(d.call_class, d.denial, false, 0);
      return;
    }
    default:
      answer_continue(req.id);
  }
}

// The line first (it then precedes whatever the caller prints about its error), then the answer,
// then the record: written now, or, for a traced call let run, completed at its exit.
GDRPROXY_HOT void Session::carry_out(const seccomp_notif& req, CallDecision& d, uint64_t t0) {
  if (!d.line.empty()) std::fprintf(stderr, "%s%s\n", log_prefix_.c_str(), d.line.c_str());
  switch (d.answer) {
    case CallDecision::Answer::kNone:
      return;
    case CallDecision::Answer::kContinue: {
      if (!d.record || !tracing_) {
        answer_continue(req.id);
        return;
      }
      // Traced: registered so that the observer completes its record at the call's exit (or
      // written now, result unknown); for rdma_cm and uverbs its write()s are watched too.
      TraceRecord& r = *d.record;
      const pid_t tid = static_cast<pid_t>(req.pid);
      const uint64_t seq = r.seq;
      const uint32_t tgid = r.who.host_tgid;
      const std::optional<uint32_t> waiting = trace_->await(r, tid, t0, d.watch_writes);
      if (waiting && d.watch_writes) engine_.route_tgid(tgid, this);
      const bool ran = answer_continue(req.id) == 0;
      trace_->answered(waiting, seq, r, tid, ran);
      return;
    }
    case CallDecision::Answer::kError:
      answer_error(req.id, d.err);
      break;
    case CallDecision::Answer::kFd: {
      const int fd = answer_fd(req.id, d.fd.get(), d.cloexec);
      d.fd.reset();
      ++stats_.brokered;
      if (!d.record) break;
      if (fd >= 0) {
        d.record->ret = fd;
      } else {
        d.record->ret = -1;
        d.record->err = -fd;
        if (d.note_failed_fd) d.record->note = "fd injection failed";
      }
      break;
    }
  }
  if (!d.record) return;
  d.record->latency_us = double(monotonic_ns() - t0) / 1e3;
  if (tracing_) trace_->emit(std::move(*d.record));
}

void Session::finish(const std::string& why) {
  trace_->finish(why);
}

}  // namespace gdrproxy::proxy
