// A Session: one sandbox's device calls, served from its seccomp listener fds (one for `gdrproxy
// run`; one per process a runtime starts in a container, for the agent). It owns everything that
// is that sandbox's: grants, compiled policy, mode, trace sinks, pending results, identities,
// denial log and counters, and the mutex most of it is touched under (the waiting records have a
// lock of their own, so results are completed while calls are served). Each listener has a receiver
// thread blocked in RECV that handles the calls it receives itself (no wake-up of another thread
// on the way: the fastest round trip a supervisor can make); the session's own loop thread does
// the rest (results, timers, hang-ups, stats). The ideas not to miss: every notification is
// answered exactly once, inside an exception boundary, so nothing a tenant sends can leave a
// caller blocked or take the session (or the engine under it) down; the work that can block on
// the tenant (path resolution on its filesystems, reads of its memory) runs on the session's own
// threads, so it can only ever stall that sandbox, and the engine's watchdog answers a call stuck
// past its deadline (EIO) and marks the session degraded; RECV does not return when the last
// task using a filter exits, so the loop waits for each listener's hang-up and interrupts its
// receiver with a signal; a session ends when every listener has hung up and, where it has one,
// its init process has exited (its pidfd is readable).
#pragma once

#include <linux/seccomp.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "proxy/base/unique_fd.h"
#include "proxy/broker/open_broker.h"
#include "proxy/devices/device_catalog.h"
#include "proxy/engine/call_handler.h"
#include "proxy/engine/denial_log.h"
#include "proxy/engine/engine.h"
#include "proxy/engine/in_flight.h"
#include "proxy/engine/kernel_inputs.h"
#include "proxy/engine/latency_histogram.h"
#include "proxy/engine/pending_results.h"
#include "proxy/engine/proc_fd_dirs.h"
#include "proxy/engine/process_info.h"
#include "proxy/engine/received_ids.h"
#include "proxy/engine/session_stats.h"
#include "proxy/observe/exit_event.h"
#include "proxy/policy/policy.h"
#include "proxy/sandbox/ioctl_lsm.h"
#include "proxy/sandbox/kernel_allow.h"
#include "proxy/trace/json_trace_writer.h"
#include "proxy/trace/trace_record.h"

namespace gdrproxy::proxy {

struct SessionConfig {
  std::string name;  // shown in notes: "" for `gdrproxy run`, the container id for the agent
  Policy policy;
  Grants grants;
  Mode mode = Mode::kEnforce;
  bool trace_text = false;                // text lines on stderr
  std::optional<std::string> trace_json;  // JSONL file, opened close-on-exec
  bool quiet = false;                     // no notes on stderr (denial lines stay)
  // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP on every listener; nullopt = by CPU count.
  std::optional<bool> sync_wakeup;
  // An NVIDIA driver the ABI tables do not know: police NVIDIA calls trace-only rather than
  // refuse to start in enforce mode.
  bool allow_unknown_nvidia_driver = false;
  // > 0: a call not answered within this many ms (its path lookup, or a read of the caller's
  // memory, blocked on the tenant: a hung FUSE mount) is answered EIO by the engine's watchdog,
  // and the session is marked degraded (its next calls wait for its thread).
  // 0: no deadline (`gdrproxy run`: the only tenant can stall only itself).
  unsigned blocking_deadline_ms = 0;
  // Perform trapped pidfd_getfd calls whose target is a process of this sandbox (its pid
  // namespace, set_pid_namespace) with the supervisor's rights, and inject the fd.
  bool broker_pidfd_getfd = false;
  // Let the requests this policy allows whatever their parameters run in the kernel, untrapped
  // (enforce mode without a trace only): the session computes them, the launcher installs them
  // (`gdrproxy run` only: an OCI profile cannot express them).
  bool kernel_allow = false;
  // The BPF LSM ioctl judge (proxy/sandbox/ioctl_lsm.h; `gdrproxy run` only): off; on (refuse
  // to start where the kernel cannot run it); auto (use it where it can).
  LsmChoice lsm = LsmChoice::kOff;
};

// Every NVIDIA GPU node of `catalog` is granted: device objects then need no GPU check.
bool every_gpu_granted(const DeviceCatalog& catalog, const Grants& grants);

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
  const SessionConfig& config() const { return config_; }
  bool tracing() const { return config_.trace_text || json_out_ != nullptr; }
  // The ioctl requests the filter may let run untrapped (empty unless config.kernel_allow, in
  // enforce mode, without a trace; see proxy/sandbox/kernel_allow.h).
  const KernelAllowed& kernel_allowed() const { return kernel_allowed_; }
  // With the BPF LSM judge loaded: judges `pid` (the sandbox's first task, before it runs the
  // command) and every task it creates. Does nothing without the judge; throws gdrproxy::Error
  // when the task cannot be marked.
  void judge_in_kernel(pid_t pid);
  bool judged_in_kernel() const { return ioctl_lsm_ != nullptr; }
  // The closing lines of `gdrproxy run`: lost results, failed-closed calls, counts.
  void print_summary(bool with_stats) const;

  // From the engine's loop: results of this session's calls and write()s it watches, in the
  // order the observer reported them; handled on the session's thread.
  void deliver(std::vector<gdrproxy_exit_event>&& events);

 private:
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
  };
  // The one place a notification is answered; each records that the current one was. A call
  // the watchdog answered first is not answered again (they then return -ETIMEDOUT).
  int answer_continue(uint64_t id);
  int answer_error(uint64_t id, int err);
  int answer_fd(uint64_t id, int srcfd, bool cloexec);
  bool claim();
  // Claims the call, then sends (timed into the ioctl phases while an ioctl is handled).
  template <typename Send>
  int answer(Send send);
  void note(const std::string& msg) const;
  // The untrapped requests (kernel_allowed_) and the BPF LSM judge (ioctl_lsm_), per config_.
  void setup_kernel_judgement();
  void setup_unread_allow();
  void add_listener_here(int listener_fd, ReceivedIdPage ids);
  // A taken-over listener's recovery (received_ids.h), on its receiver thread.
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
  void unwatch_fds_of_gone_processes();
  void arm_watchdog();
  void watchdog_tick();
  SessionStats stats_here() const;
  // A call's result (on the loop, without mu_: it touches only its claimed entry and what is the
  // loop's own) or a watched write (under mu_).
  void on_exit_event(const gdrproxy_exit_event& e);
  void handle(const seccomp_notif& req);
  // `sampled`: an ioctl timed in total and phase by phase (its t0 from the precise clock).
  void dispatch(const seccomp_notif& req, uint64_t t0, bool sampled);
  // Adds the time since t0 to `total_ns` and to the latency histogram (one clock read); returns it.
  uint64_t record_latency(uint64_t& total_ns, uint64_t t0);
  // Carries out the handler's decision: the line, the answer, the trace record.
  void carry_out(const seccomp_notif& req, CallDecision& d, uint64_t t0);
  void continue_observed(TraceRecord& r, uint64_t id, pid_t tid, uint64_t t0, bool watch_rdma_cm);
  void on_cm_write(const gdrproxy_exit_event& e);
  // The BPF LSM judge's refusals: waited for on the session's loop, each said in one line (once
  // per process, node and reason) and traced.
  void arm_lsm_refusals();
  void say_lsm_refusals();
  void say_lsm_refusal(const IoctlLsm::Refusal& f);
  void emit(TraceRecord&& r);
  static ProcessIdentity identity_at_exit(const gdrproxy_exit_event& e);

  Engine& engine_;
  SessionConfig config_;
  // Held by a receiver while it handles a call and by the loop's handlers that touch what a call
  // does (watched writes, the sweep, stats, the BPF LSM judge's refusals): every member below
  // that is not said to be the loop's own, an atomic, pending_ or inflight_'s. Results of calls
  // are completed without it, so the loop's turns under it are short and rare (a watched write,
  // the sweep each second): a receiver takes it without a wait on almost every call.
  std::mutex mu_;
  // The session's own loop and thread: timers, results, hang-ups, stats.
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread thread_;
  // The catalog this session began with (its grants, Landlock rules and LSM tables were made
  // from it), kept whatever newer one the engine publishes. A node it lacks is looked up by
  // device() in the engine's live catalog: never granted here.
  const std::shared_ptr<const DeviceCatalog> catalog_held_;
  const DeviceCatalog& catalog_;
  // The kernel's answers to the handler (memory, fds, identities, the open broker, pidfds).
  KernelInputs inputs_;
  // Decides each call (made once the setup below is known).
  std::optional<CallHandler> handler_;
  // "gdrproxy: ", or "gdrproxy: [<container id>] " in the agent: every line says whose it is.
  std::string log_prefix_;
  Enforcement enforcement_;  // the mode and the unknown-driver rule
  KernelAllowed kernel_allowed_;
  // Requests the policy allows whatever their parameters on a granted node of their class (the
  // kernel ALLOW's, computed as if the class qualified): when one traps anyway (a class only
  // partly granted without the BPF LSM judge, an OCI profile that traps every device ioctl), it
  // is allowed once the fd's node is found granted, without reading its parameters. Sorted.
  std::vector<uint32_t> unread_uvm_, unread_frontend_;
  std::unique_ptr<IoctlLsm> ioctl_lsm_;  // the BPF LSM judge, when config_.lsm loaded it
  std::unique_ptr<boost::asio::posix::stream_descriptor> lsm_refusals_;  // its ring, readable
  DenialLog lsm_denials_;  // the judge's lines: one per (process, node, reason)
  std::unique_ptr<boost::asio::posix::stream_descriptor> init_;  // pidfd of the init process
  bool init_exited_ = false;
  ExitObserver* observer_ = nullptr;           // the engine's, when tracing and available
  std::unique_ptr<JsonTraceWriter> json_out_;  // --trace-json: its own thread writes the file
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
  std::atomic<uint64_t> deadline_failures_{0};
  std::atomic<bool> degraded_{false};
  std::unique_ptr<boost::asio::steady_timer> watchdog_;  // on the engine's loop
  DenialLog denials_once_;  // the watchdog's own: one deadline line per process
  boost::asio::steady_timer sweep_;
  std::set<pid_t> gone_at_last_sweep_;  // tids with a pending result that had exited then
  // Records waiting for their result (a returned call's result waits in the ring until a drain,
  // some ms), by the low half of their registration's cookie (the session's id, id_, the high
  // half). Not under mu_: the loop completes them while the receivers serve.
  PendingResults pending_;
  // Writes waiting record `w` without its result, its note saying why; frees the entry. False
  // if its result claimed it first.
  bool write_without_result(const PendingResults::Waiting& w, std::string note);
  void give_up_unreported_results();
  std::set<uint64_t> unreported_at_last_sweep_;  // seqs of waiting records found unarmed then
  uint64_t cookie_of(uint32_t index) const { return (uint64_t{id_} << 32) | index; }
  uint32_t id_ = 0;  // the engine's (Engine::attach)
  // Fds whose writes the observer watches, with their class, recorded when their open returned.
  // The loop's (results, the sweep, stats).
  std::map<std::pair<uint32_t, uint32_t>, DeviceClass> watched_fds_;
  static constexpr size_t kMaxWatchedFds = 65536;
  SessionStats stats_;
  LatencyHistogram latency_;
};

}  // namespace gdrproxy::proxy
