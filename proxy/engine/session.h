// A Session: one sandbox's device calls, served from its seccomp listener fds (one for `gdrproxy
// run`; one per process a runtime starts in a container, for the agent). It keeps the sandbox's
// threads, listeners and lifetime: a receiver thread per listener blocked in RECV, which has the
// call handler (call_handler.h) decide each call it receives and carries the decision out (no
// wake-up of another thread on the way: the fastest round trip a supervisor can make), and the
// session's own loop thread for the rest (results, timers, hang-ups, stats); the mutex the
// receivers and the loop touch the sandbox's state under; the trace (session_trace.h), what the
// kernel judges (kernel_judgement.h) and the deadline watchdog (deadline_watchdog.h). The ideas
// not to miss: every notification is answered exactly once, inside an exception boundary, so
// nothing a tenant sends can leave a caller blocked or take the session (or the engine under it)
// down; the work that can block on the tenant (path resolution on its filesystems, reads of its
// memory) runs on the session's own threads, so it can only ever stall that sandbox, and the
// engine's watchdog answers a call stuck past its deadline (EIO) and marks the session degraded;
// RECV does not return when the last task using a filter exits, so the loop waits for each
// listener's hang-up and interrupts its receiver with a signal; a session ends when every
// listener has hung up and, where it has one, its init process has exited (its pidfd is
// readable).
#pragma once

#include <linux/seccomp.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "proxy/devices/device_catalog.h"
#include "proxy/engine/call_handler.h"
#include "proxy/engine/deadline_watchdog.h"
#include "proxy/engine/denial_log.h"
#include "proxy/engine/engine.h"
#include "proxy/engine/in_flight.h"
#include "proxy/engine/kernel_inputs.h"
#include "proxy/engine/kernel_judgement.h"
#include "proxy/engine/latency_histogram.h"
#include "proxy/engine/received_ids.h"
#include "proxy/engine/session_config.h"
#include "proxy/engine/session_stats.h"
#include "proxy/engine/session_trace.h"
#include "proxy/observe/exit_event.h"
#include "proxy/policy/policy.h"
#include "proxy/sandbox/ioctl_lsm.h"
#include "proxy/trace/json_trace_writer.h"
#include "proxy/trace/trace_record.h"

namespace gdrproxy::proxy {

class Session {
 public:
  // Throws gdrproxy::Error when the configuration cannot be served here (an unknown NVIDIA
  // driver in enforce mode without allow_unknown_nvidia_driver, an unwritable trace file).
  Session(Engine& engine, SessionConfig config);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Serves `listener_fd` (taken over: closed with the session) with a receiver thread of its own.
  // Several listeners may be added (one per process a runtime started in the same container). The
  // first starts the session's threads: what follows below must be set before it (add_listener
  // and watch_init may come later). Called on the engine's loop, like every public member but
  // on_exit_event's delivery. A listener that gets no receiver (no thread to spare) is closed, so
  // its callers fail (ENOSYS) instead of waiting, and Error says so. `ids` (the agent's, kept in
  // its fd store) receives the id of each notification received; one taken over from a killed
  // agent first has that agent's unanswered calls answered (received_ids.h).
  void add_listener(int listener_fd, ReceivedIdPage ids = {});
  // A listener whose process its runtime did not name (crun's `exec`): the first caller received
  // on it is checked by `bind` (on the receiver's thread, with the caller's pid as the session
  // sees it, the listener and the call's id; it answers "" when the caller is the sandbox's, else
  // why not) before its call is handled. A caller refused makes the listener refused: that call
  // and every later one on it fail with ENOSYS, unread, and the reason is said once.
  using BindCheck = std::function<std::string(pid_t pid, int listener_fd, uint64_t id)>;
  void add_unbound_listener(int listener_fd, ReceivedIdPage ids, BindCheck bind);
  // The sandbox's own pid namespace (the inode of /proc/<pid>/ns/pid of its first process): the
  // processes pidfd_getfd may be brokered between. Unset, or the supervisor's own: none.
  void set_pid_namespace(ino_t ns) { handler_->set_pid_namespace(ns); }
  // More pid namespaces whose processes this session's pidfd_getfd may reach (the operator's
  // group of sessions: one job's ranks on one node). Asked at each call, so members that come
  // and go are seen; never the supervisor's own namespace, whatever it answers.
  void set_peer_namespaces(std::function<bool(ino_t)> is_peer) {
    handler_->set_peer_namespaces(std::move(is_peer));
  }
  // The sandbox's init process (taken over): the session ends only once it has exited, as well
  // as every listener having hung up.
  void watch_init(int pidfd);
  // Called once, on the engine's loop, when every listener has hung up.
  void on_end(std::function<void()> cb) { on_end_ = std::move(cb); }
  bool ended() const { return ended_; }
  // Lets the receivers go (a call being handled is finished first), lets the session's loop
  // finish what is queued (results delivered but not yet written) and joins them all; afterwards
  // the session is single-threaded again (finish, print_summary). False, and nothing more done,
  // while a call is stuck past its deadline: such a session must not be destroyed (the agent
  // leaves it to the process's exit).
  bool stop();
  bool stuck() const { return inflight_.stuck(); }
  // Completes what is still pending (results never observed) and flushes the sinks. After stop.
  void finish(const std::string& why);
  // From the session's thread (a copy, within 500 ms), or what the watchdog knows while stuck.
  SessionStats stats();
  const std::string& name() const { return config_.name; }
  // Some call was not answered in time (from any thread).
  bool degraded() const { return watchdog_.degraded(); }
  // Bytes its JSON trace has written (from any thread).
  uint64_t trace_bytes() const;
  const SessionConfig& config() const { return config_; }
  bool tracing() const { return tracing_; }
  // The ioctl requests the filter may let run untrapped (empty unless config.kernel_allow, in
  // enforce mode, without a trace; see proxy/sandbox/kernel_allow.h).
  const KernelAllowed& kernel_allowed() const { return judgement_.allowed; }
  // With the BPF LSM judge loaded: judges `pid` (the sandbox's first task, before it runs the
  // command) and every task it creates. Does nothing without the judge; throws gdrproxy::Error
  // when the task cannot be marked.
  void judge_in_kernel(pid_t pid);
  bool judged_in_kernel() const { return judgement_.lsm != nullptr; }
  // A refusal the BPF LSM judge made for one of this session's tasks (another's judge: the
  // agent's, which reads its ring), said in one line and traced as the session's own refusals.
  void say_kernel_refusal(const IoctlLsm::Refusal& f);
  // The opening warning, and trace record, of an unconfined container its operator accepted.
  void record_unconfined(const std::string& why);
  // The closing lines of `gdrproxy run`: lost results, failed-closed calls, counts.
  void print_summary(bool with_stats) const;

  // From the engine's loop: results of this session's calls and write()s it watches, in the
  // order the observer reported them; handled on the session's thread.
  void deliver(std::vector<gdrproxy_exit_event>&& events);

 private:
  void say_kernel_refusal_locked(const IoctlLsm::Refusal& f);  // under mu_
  // One listener and its receiver. The receiver reads `leave` and sets `done`; the rest is the
  // loop's.
  struct Listener {
    UniqueFd fd;
    ReceivedIdPage ids;              // where each received id is stored; none for `gdrproxy run`
    std::vector<uint64_t> recv_buf;  // one notification (engine.notif_size() bytes, 8-aligned)
    std::thread receiver;
    std::atomic<bool> leave{false};  // the receiver returns at its next wake-up
    std::atomic<bool> done{false};   // it has: join it
    bool hung_up = false;
    BindCheck bind;        // set until its first caller is checked (add_unbound_listener)
    bool refused = false;  // its first caller was not the sandbox's: every call ENOSYS
  };
  // The one place a notification is answered; each records that the current one was. A call
  // the watchdog answered first is not answered again (they then return -ETIMEDOUT).
  int answer_continue(uint64_t id);
  int answer_error(uint64_t id, int err);
  int answer_fd(uint64_t id, int srcfd, bool cloexec);
  // Claims the call, then sends (timed into the ioctl phases while an ioctl is handled).
  template <typename Send>
  int answer(Send send);
  void note(const std::string& msg) const;
  // The unknown-driver rule, what the kernel judges, the call handler and the trace, per config_.
  void set_up(std::unique_ptr<JsonTraceWriter> json);
  void add_listener_here(int listener_fd, ReceivedIdPage ids, BindCheck bind);
  // A call on a listener not bound yet: its caller checked. False: the call was answered ENOSYS.
  bool bound(Listener& l, const seccomp_notif& req);
  // One call received on `l`, handled under mu_ (receive and handle_stranded).
  void handle_from(Listener& l, seccomp_notif& req);
  // A taken-over listener's recovery (received_ids.h), on its receiver thread.
  void handle_stranded(Listener& l);
  void answer_stranded(Listener& l, std::optional<uint64_t> first);
  // The receiver's loop: RECV, then the call handled under mu_, until told to leave.
  void receive(Listener& l);
  void watch_hangups();
  void hang_up(Listener& l);
  // Interrupts the receivers told to leave until each has, backing off while one is busy;
  // joins them; completes stopped_ once none is left.
  void release_receivers();
  void forget_hung_up_listeners();
  void check_end();
  void arm_sweep();
  SessionStats stats_here() const;
  // A call's result (on the loop, without mu_) or a watched write (under it).
  void on_exit_event(const gdrproxy_exit_event& e);
  // The call `req`, inside the exception boundary that answers it whatever happens.
  void handle(const seccomp_notif& req);
  // `sampled`: an ioctl timed in total and phase by phase (its t0 from the precise clock).
  void dispatch(const seccomp_notif& req, uint64_t t0, bool sampled);
  // Adds the time since t0 to `total_ns` and to the latency histogram (one clock read); returns it.
  uint64_t record_latency(uint64_t& total_ns, uint64_t t0);
  // Carries out the handler's decision: the line, the answer, the trace record.
  void carry_out(const seccomp_notif& req, CallDecision& d, uint64_t t0);

  Engine& engine_;
  SessionConfig config_;
  const bool tracing_;  // text lines or a JSON file
  // Held by a receiver while it handles a call and by the loop's handlers that touch what a call
  // does (watched writes, the sweep, stats, the BPF LSM judge's refusals): every member below
  // that is not said to be the loop's own, an atomic, or the trace's waiting records and
  // inflight_'s. Results of calls are completed without it, so the loop's turns under it are
  // short and rare (a watched write, the sweep each second): a receiver takes it without a wait
  // on almost every call.
  std::mutex mu_;
  // The session's own loop and thread: timers, results, hang-ups, stats.
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread thread_;
  // The catalog this session began with (its grants, Landlock rules and LSM tables were made
  // from it), kept whatever newer one the engine publishes. A node it lacks is looked up in the
  // engine's live catalog (KernelInputs::device): never granted here.
  const std::shared_ptr<const DeviceCatalog> catalog_held_;
  const DeviceCatalog& catalog_;
  // "gdrproxy: ", or "gdrproxy: [<container id>] " in the agent: every line says whose it is.
  const std::string log_prefix_;
  // The kernel's answers to the handler (memory, fds, identities, the open broker, pidfds).
  KernelInputs inputs_;
  Enforcement enforcement_;                  // the mode and the unknown-driver rule
  KernelJudgement judgement_;                // untrapped requests, the BPF LSM judge
  std::optional<LsmRefusals> lsm_refusals_;  // the judge's refusals, said and traced
  DenialLog lsm_said_;                       // one line per (process, node, reason) of them
  std::optional<CallHandler> handler_;       // decides each call
  std::optional<SessionTrace> trace_;        // sinks, records waiting for results, watched fds
  std::unique_ptr<boost::asio::posix::stream_descriptor> init_;  // pidfd of the init process
  bool init_exited_ = false;
  std::vector<std::unique_ptr<Listener>> listeners_;  // the loop's; hung-up ones leave it
  bool listened_ = false;                             // a listener was ever added
  // An epoll set of every listener not yet hung up, waiting for no event: the kernel still
  // reports a hang-up (and only that: a notification does not wake it). The loop's.
  std::unique_ptr<boost::asio::posix::stream_descriptor> hangups_;
  boost::asio::steady_timer release_timer_;  // the loop's: release_receivers' next turn
  std::chrono::milliseconds release_delay_{1};
  std::shared_ptr<std::promise<void>> stopped_;  // stop()'s, once the receivers are gone
  int nfd_ = -1;                                 // the listener of the notification being handled
  bool answered_ = false;
  // While an ioctl is handled, answer and trace time is charged to its phases.
  IoctlPhases* phases_ = nullptr;
  std::atomic<bool> ended_{false};
  std::function<void()> on_end_;
  // The notification being handled, shared with the watchdog (on the engine's loop): whichever
  // of the two claims it answers it.
  InFlightCall inflight_;
  DeadlineWatchdog watchdog_;
  boost::asio::steady_timer sweep_;
  uint32_t id_ = 0;  // the engine's (Engine::attach)
  SessionStats stats_;
  LatencyHistogram latency_;
};

}  // namespace gdrproxy::proxy
