// The Session's notification handling. Each listener's receiver thread waits in RECV and handles
// what it receives under the session's mutex; each notification is handled inside an exception
// boundary: whatever a tenant's bytes make a handler throw, that call is failed closed (EPERM),
// one line says why, and the session keeps serving. Every notification is answered exactly once:
// CONTINUE, an error, or an injected fd, by its receiver or, past the deadline, by the engine's
// watchdog, whichever claims it first. Mechanism only: what is allowed comes from the Policy,
// what a call means from the decoders, how it is shown from the trace sinks.
#include "proxy/engine/session.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "proxy/abi/nvidia_abi.h"
#include "proxy/abi/uverbs_abi.h"
#include "proxy/base/error.h"
#include "proxy/base/hot_path.h"
#include "proxy/base/unique_fd.h"
#include "proxy/broker/fd_broker.h"
#include "proxy/broker/open_broker.h"
#include "proxy/decode/nvidia_decoder.h"
#include "proxy/decode/rdma_cm_decoder.h"
#include "proxy/decode/uverbs_decoder.h"
#include "proxy/devices/device_catalog.h"
#include "proxy/devices/nvidia_gpus.h"
#include "proxy/engine/clock.h"
#include "proxy/engine/denial_log.h"
#include "proxy/engine/process_info.h"
#include "proxy/engine/seccomp_notify.h"
#include "proxy/gpudirect/dmabuf_check.h"
#include "proxy/mem/process_memory.h"
#include "proxy/observe/exit_observer.h"
#include "proxy/sandbox/ioctl_lsm.h"
#include "proxy/trace/escape.h"
#include "proxy/trace/trace_record.h"

namespace gdrproxy::proxy {
namespace {

namespace asio = boost::asio;

// "Some rdma_cm device": a marked rdma_cm fd whose write was seen after the fd was closed.
const DeviceNode kAnyRdmaCm{"/dev/infiniband/rdma_cm", "rdma_cm", DeviceClass::kRdmaCm, 0, true};
const DeviceNode kAnyUverbs{"/dev/infiniband/uverbs*", "uverbs", DeviceClass::kUverbs, 0, true};

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

// No task uses the listener's filter any more (and no notification is left on it).
bool listener_hung_up(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLHUP) && !(p.revents & POLLIN);
}

// Whether every node of a device class is granted, and whether any is (one pass). A class with
// no catalogued node has neither: its driver may register later, and a node of it must then trap
// (and be refused), not meet requests let run untrapped.
struct ClassGrants {
  bool all = true, any = false;
};
ClassGrants class_grants(const DeviceCatalog& catalog, const Grants& grants, DeviceClass cls) {
  ClassGrants g;
  bool seen = false;
  for (const DeviceNode& n : catalog.nodes()) {
    if (n.device_class != cls) continue;
    seen = true;
    const bool granted = grants.granted(n);
    g.all = g.all && granted;
    g.any = g.any || granted;
  }
  g.all = g.all && seen;
  return g;
}

}  // namespace

bool every_gpu_granted(const DeviceCatalog& catalog, const Grants& grants) {
  for (const DeviceNode& n : catalog.nodes())
    if (n.device_class == DeviceClass::kNvidiaFrontend && n.name != "nvidiactl" &&
        !grants.granted(n))
      return false;
  return true;
}

Session::Session(Engine& engine, SessionConfig config)
    : engine_(engine),
      config_(std::move(config)),
      catalog_held_(engine.current_catalog()),
      catalog_(*catalog_held_),
      inputs_(catalog_, engine.live_catalog(), config_.grants, config_.policy.open_errno(),
              engine.nvidia()),
      log_prefix_(config_.name.empty() ? "gdrproxy: "
                                       : "gdrproxy: [" + printable(config_.name) + "] "),
      release_timer_(io_),
      sweep_(io_) {
  UniqueFd hangups(::epoll_create1(EPOLL_CLOEXEC));
  if (!hangups) throw_errno("cannot create the epoll set that sees listeners hang up", errno);
  hangups_ = std::make_unique<asio::posix::stream_descriptor>(io_, hangups.release());
  if (config_.trace_json) {
    UniqueFd f(::open(config_.trace_json->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
    if (!f) throw_errno("cannot write trace file " + *config_.trace_json, errno);
    json_out_ = std::make_unique<JsonTraceWriter>(std::move(f));
  }
  // The unknown-driver rule (proxy/policy/enforcement.h).
  const NvidiaDriver& nv = engine_.nvidia();
  NvidiaDriverFacts facts{nv.loaded, nv.known};
  for (const auto& n : catalog_.nodes())
    if (n.device_class == DeviceClass::kNvidiaFrontend || n.device_class == DeviceClass::kNvidiaUvm)
      facts.has_nodes = true;
  facts.version = nv.version;
  if (nv.abi) facts.tables = nv.abi->version;
  std::string why_trace_only;
  enforcement_ =
      Enforcement::decide(config_.mode, facts, config_.allow_unknown_nvidia_driver, why_trace_only);
  if (!why_trace_only.empty()) note(why_trace_only);
  setup_kernel_judgement();
  if (tracing()) {
    std::string why;
    observer_ = engine_.observer(why);
    if (!observer_) note("results of allowed calls will not be shown (" + why + ")");
  }
  CallHandlerSetup h{config_.policy, config_.grants};
  h.enforcement = enforcement_;
  h.tracing = tracing();
  h.observed = observer_ != nullptr;
  h.broker_pidfd_getfd = config_.broker_pidfd_getfd;
  h.nvidia_abi = engine_.nvidia().abi;
  h.nvidia_version_known = engine_.nvidia().version.has_value();
  h.nvidia_major = engine_.nvidia().major;
  h.all_gpus_granted = every_gpu_granted(catalog_, config_.grants);
  h.unread_uvm = std::move(unread_uvm_);
  h.unread_frontend = std::move(unread_frontend_);
  if (const ClassPolicy* uverbs = config_.policy.class_policy(DeviceClass::kUverbs))
    h.dmabuf_exporters = uverbs->dmabuf_exporters;
  h.next_seq = [&engine = engine_] { return engine.next_seq(); };
  handler_.emplace(std::move(h), inputs_.inputs());
  arm_sweep();
  watch_hangups();
  id_ = engine_.attach(this);  // last: a constructor that throws leaves no route behind
}

void Session::setup_kernel_judgement() {
  const bool untrapped_ok = config_.kernel_allow && config_.mode == Mode::kEnforce && !tracing() &&
                            enforcement_.nvidia_enforced();
  KernelAllowFacts facts;
  if (untrapped_ok) {
    facts.nvidia_abi = engine_.nvidia().abi;
    const ClassGrants frontend =
        class_grants(catalog_, config_.grants, DeviceClass::kNvidiaFrontend);
    const ClassGrants uvm = class_grants(catalog_, config_.grants, DeviceClass::kNvidiaUvm);
    facts.nvidia_frontend_all_granted = frontend.all;
    facts.nvidia_frontend_any_granted = frontend.any;
    facts.nvidia_uvm_all_granted = uvm.all;
    facts.nvidia_uvm_any_granted = uvm.any;
  }
  if (config_.lsm != LsmChoice::kOff) {
    // With the judge, requests may run untrapped on some granted nodes of a class; without it
    // (below) only where every node of the class is granted. Without untrapped requests (a
    // trace, trace mode) it still refuses every ioctl on an ungranted node in the kernel.
    KernelAllowFacts judged = facts;
    judged.judged_per_device = true;
    KernelAllowed untrapped;
    if (untrapped_ok) untrapped = kernel_allowed_ioctls(config_.policy, judged);
    std::string why;
    ioctl_lsm_ = IoctlLsm::load(ioctl_lsm_tables(catalog_, config_.grants, untrapped), why);
    if (ioctl_lsm_) {
      kernel_allowed_ = std::move(untrapped);
      UniqueFd ring(::dup(ioctl_lsm_->refusals_fd()));
      if (!ring) throw_errno("BPF LSM: the refusals' ring", errno);
      lsm_refusals_ = std::make_unique<asio::posix::stream_descriptor>(io_, ring.release());
      arm_lsm_refusals();
      return;
    }
    if (config_.lsm == LsmChoice::kOn) throw Error("--lsm on: " + why);
    note("--lsm auto: " + why + "; device ioctls are judged by gdrproxy alone");
  }
  if (untrapped_ok) kernel_allowed_ = kernel_allowed_ioctls(config_.policy, facts);
  setup_unread_allow();
}

void Session::setup_unread_allow() {
  if (config_.mode != Mode::kEnforce || tracing() || !enforcement_.nvidia_enforced() ||
      !engine_.nvidia().abi)
    return;
  // The fd's node is checked granted before this applies, so every class qualifies.
  KernelAllowFacts facts;
  facts.nvidia_abi = engine_.nvidia().abi;
  facts.nvidia_frontend_any_granted = facts.nvidia_uvm_any_granted = true;
  facts.judged_per_device = true;
  KernelAllowed unconditional = kernel_allowed_ioctls(config_.policy, facts);
  unread_uvm_ = std::move(unconditional.uvm_requests);
  unread_frontend_ = std::move(unconditional.frontend_requests);
  std::sort(unread_uvm_.begin(), unread_uvm_.end());
  std::sort(unread_frontend_.begin(), unread_frontend_.end());
}

void Session::judge_in_kernel(pid_t pid) {
  if (ioctl_lsm_) ioctl_lsm_->judge(pid);
}

void Session::arm_lsm_refusals() {
  lsm_refusals_->async_wait(asio::posix::stream_descriptor::wait_read,
                            [this](const boost::system::error_code& ec) {
                              if (ec) return;
                              std::lock_guard<std::mutex> lock(mu_);
                              say_lsm_refusals();
                              arm_lsm_refusals();
                            });
}

void Session::say_lsm_refusals() {
  if (ioctl_lsm_)
    ioctl_lsm_->take_refusals([this](const IoctlLsm::Refusal& f) { say_lsm_refusal(f); });
}

// The judge refused in the kernel and the caller has its EPERM already: this line follows the
// call instead of preceding whatever the caller prints (the supervisor's own refusals precede).
void Session::say_lsm_refusal(const IoctlLsm::Refusal& f) {
  const DeviceNode* node = inputs_.device(f.rdev);
  const std::string number = std::to_string(major(f.rdev)) + ":" + std::to_string(minor(f.rdev));
  const std::string device = node ? node->name : "char device " + number;
  std::string reason;
  switch (f.why) {
    case IoctlLsm::Refusal::Why::kUngranted:
      reason = "device " + device + " is not granted";
      break;
    case IoctlLsm::Refusal::Why::kUnknownMinor:
      reason =
          "char device " + number + " belongs to a guarded driver but is no device gdrproxy knows";
      break;
    case IoctlLsm::Refusal::Why::kNotAllowedHere:
      reason =
          "the request runs untrapped only on the granted devices the policy allows it on, "
          "not on " +
          device;
      break;
  }
  DecodedCall call = undecoded_call(node ? node->device_class : DeviceClass::kUnknown, f.request);
  if (lsm_denials_.first(static_cast<uint32_t>(f.tgid), device, reason))
    std::fprintf(
        stderr,
        "%sdenied %s on %s by pid %d (ns pid %d, %s) in the kernel (BPF LSM): %s -> EPERM\n",
        log_prefix_.c_str(), call.name.c_str(), node ? node->path.c_str() : number.c_str(), f.tid,
        f.ns_tid, printable(f.comm).c_str(), printable(reason).c_str());
  if (!tracing()) return;
  TraceRecord r;
  r.seq = engine_.next_seq();
  r.wall_time = wall_seconds();
  r.who.host_tid = static_cast<uint32_t>(f.tid);
  r.who.host_tgid = static_cast<uint32_t>(f.tgid);
  r.who.ns_tid = static_cast<uint32_t>(f.ns_tid);
  r.who.comm = f.comm;
  r.syscall = "ioctl";
  r.device = device;
  r.call = std::move(call);
  r.decision = "deny";
  r.ret = -1;
  r.err = EPERM;
  r.reason = reason;
  r.note = "refused in the kernel by the BPF LSM judge; the fd is not known";
  emit(std::move(r));
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

GDRPROXY_HOT bool Session::claim() {
  answered_ = true;
  return inflight_.claim();
}

template <typename Send>
GDRPROXY_HOT int Session::answer(Send send) {
  const uint64_t t0 = phases_ ? monotonic_ns() : 0;
  const int rc = claim() ? send() : -ETIMEDOUT;
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
  if (thread_.joinable()) {
    auto page = std::make_shared<ReceivedIdPage>(std::move(ids));
    asio::post(io_, [this, listener_fd, page] {
      try {
        add_listener_here(listener_fd, std::move(*page));
      } catch (const Error& e) {
        // Said even when quiet: a process of the sandbox is left without its device calls.
        std::fprintf(stderr, "%s%s\n", log_prefix_.c_str(), printable(e.what()).c_str());
      }
    });
    return;
  }
  add_listener_here(listener_fd, std::move(ids));
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
  if (config_.blocking_deadline_ms > 0) {
    watchdog_ = std::make_unique<asio::steady_timer>(engine_.io());
    arm_watchdog();
  }
}

void Session::add_listener_here(int listener_fd, ReceivedIdPage ids) {
  auto l = std::make_unique<Listener>();
  l->fd = UniqueFd(listener_fd);
  l->ids = std::move(ids);
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
  if (l.ids.recovering()) answer_stranded(l, std::nullopt);
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
      std::lock_guard<std::mutex> lock(mu_);
      nfd_ = l.fd.get();
      inputs_.set_listener(nfd_);
      handle(req);
    } catch (const std::exception& e) {
      note(std::string("internal error in a receiver, serving on: ") + e.what());
    }
  }
  l.done.store(true, std::memory_order_release);
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
    if (config_.blocking_deadline_ms > 0) watchdog_tick();
    if (inflight_.stuck()) return false;
  }
  work_.reset();
  thread_.join();
  say_lsm_refusals();  // the loop has stopped: what the judge refused last is said now
  if (watchdog_) watchdog_->cancel();
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

void Session::arm_watchdog() {
  // A quarter of the deadline: a stuck call is answered at most 25 % after it.
  const unsigned period = std::max(1u, config_.blocking_deadline_ms / 4);
  watchdog_->expires_after(std::chrono::milliseconds(period));
  watchdog_->async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    watchdog_tick();
    if (!ended_) arm_watchdog();
  });
}

// On the engine's loop: the session's thread may be blocked in the kernel for ever (a read of
// the tenant's memory faulting into a hung FUSE server). Its call is answered here once past its
// deadline. The sandbox's further calls are not received here: a notification RECV cannot be made
// non-blocking, and the session's thread may come back and take the one this loop polled, which
// would leave the loop blocked in RECV; they wait for the session's thread (that sandbox's own
// stall, shown as "stuck" by `agent ctl stats`).
void Session::watchdog_tick() {
  const uint64_t deadline_ns = uint64_t(config_.blocking_deadline_ms) * 1000000ull;
  const uint64_t now = monotonic_ns();
  if (now < deadline_ns) return;
  const std::optional<InFlightCall::Call> overdue = inflight_.take_if_started_by(now - deadline_ns);
  if (overdue) {
    const int nr = overdue->nr;
    const uint32_t pid = overdue->pid;
    notif_error(overdue->nfd, overdue->id, EIO);
    ++deadline_failures_;
    const bool ioctl = nr == SYS_ioctl;
    const bool open = nr == SYS_open || nr == SYS_openat || nr == SYS_openat2 || nr == SYS_creat;
    if (!degraded_.exchange(true) || denials_once_.first(0, "deadline", std::to_string(pid)))
      std::fprintf(stderr,
                   "%s%s by pid %u was not decided within %u ms (%s): failed closed (EIO); the "
                   "session is degraded, its next calls wait until that one returns; other "
                   "sessions are not affected\n",
                   log_prefix_.c_str(),
                   ioctl  ? "an ioctl"
                   : open ? "an open"
                          : "a call",
                   pid, config_.blocking_deadline_ms,
                   ioctl  ? "reading its argument is blocked: memory backed by a hung filesystem?"
                   : open ? "its path lookup or the host open is blocked: a hung filesystem?"
                          : "blocked on the tenant");
  }
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

// A process's watched fds outlive it in the observer's map unless removed here: the map would
// fill (4096 entries, then new fds go unwatched in a long-running agent), and a process that
// later gets the same pid would have its writes copied for nothing.
void Session::unwatch_fds_of_gone_processes() {
  for (auto it = watched_fds_.begin(); it != watched_fds_.end();) {
    const uint32_t tgid = it->first.first;
    struct stat st;
    const bool alive = ::stat(("/proc/" + std::to_string(tgid)).c_str(), &st) == 0;
    for (; it != watched_fds_.end() && it->first.first == tgid;) {
      if (alive) {
        ++it;
        continue;
      }
      if (observer_) observer_->unwatch_cm_fd(tgid, it->first.second);
      it = watched_fds_.erase(it);
      ++stats_.fds_unwatched_gone;
    }
  }
}

void Session::arm_sweep() {
  sweep_.expires_after(std::chrono::seconds(1));
  sweep_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    std::lock_guard<std::mutex> lock(mu_);
    // A thread that died inside a call never produces an exit event. One that died just after
    // its call returned may have a result still waiting in the observer's ring (drained every
    // few milliseconds): a pending call is given up only when its thread was already gone at
    // the previous sweep.
    const std::vector<PendingResults::Waiting> waiting = pending_.waiting();
    std::set<pid_t> tids, gone;
    for (const PendingResults::Waiting& w : waiting) tids.insert(static_cast<pid_t>(w.tid));
    for (pid_t tid : tids) {
      struct stat st;
      if (::stat(("/proc/" + std::to_string(tid)).c_str(), &st) == 0) continue;
      if (!gone_at_last_sweep_.contains(tid)) {
        gone.insert(tid);
        continue;
      }
      for (const PendingResults::Waiting& w : waiting)
        if (w.tid == static_cast<uint32_t>(tid))
          write_without_result(w, "thread exited before the call returned");
      if (observer_) observer_->forget(static_cast<uint32_t>(tid));
    }
    gone_at_last_sweep_ = std::move(gone);
    give_up_unreported_results();
    unwatch_fds_of_gone_processes();
    // A refusal whose wake-up was skipped (the judge wakes once per batch) waits at most a sweep.
    say_lsm_refusals();
    if (json_out_) json_out_->flush();
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
    s.deadline_failures = deadline_failures_;
    s.degraded = degraded_;
    s.stuck = true;
    return s;
  }
  return stats_here();
}

SessionStats Session::stats_here() const {
  SessionStats s = stats_;
  s.deadline_failures = deadline_failures_;
  s.degraded = degraded_;
  s.stuck = inflight_.stuck();
  const CallCounts& c = handler_->counts();
  s.allowed_unread = c.allowed_unread;
  s.trap_copies_used = c.trap_copies_used;
  s.trap_copies_missed = c.trap_copies_missed;
  s.trap_copies_torn = c.trap_copies_torn;
  s.denied = handler_->denials().total();
  s.repeated_denials = handler_->denials().repeats();
  s.observer_lost = observer_ ? observer_->lost() : 0;
  s.observer_skipped = observer_ ? observer_->skipped() : 0;
  s.fds_watched = watched_fds_.size();
  s.p50_ns = latency_.quantile_ns(0.5);
  s.p99_ns = latency_.quantile_ns(0.99);
  return s;
}

void Session::print_summary(bool with_stats) const {
  const SessionStats s = stats_here();
  if (s.observer_lost)
    std::fprintf(stderr,
                 "%s%llu results of allowed calls were lost (the observer's ring buffer "
                 "was full); their trace records say \"result not observed\"\n",
                 log_prefix_.c_str(), static_cast<unsigned long long>(s.observer_lost));
  if (s.results_unobserved)
    std::fprintf(stderr,
                 "%s%llu traced calls have no result (their records say \"result not "
                 "observed\" and why); the kernel skipped the observer's programs %llu times\n",
                 log_prefix_.c_str(), static_cast<unsigned long long>(s.results_unobserved),
                 static_cast<unsigned long long>(s.observer_skipped));
  if (json_out_ && json_out_->dropped())
    std::fprintf(stderr,
                 "%s%llu trace records dropped: %s did not take them in time (a stalled "
                 "reader?); the calls themselves were served\n",
                 log_prefix_.c_str(), static_cast<unsigned long long>(json_out_->dropped()),
                 printable(*config_.trace_json).c_str());
  if (with_stats && observer_)
    std::fprintf(stderr,
                 "%sobserver: %llu fd watch(es) removed after their process exited, %llu left "
                 "at exit\n",
                 log_prefix_.c_str(), static_cast<unsigned long long>(s.fds_unwatched_gone),
                 static_cast<unsigned long long>(s.fds_watched));
  if (s.handler_faults)
    std::fprintf(stderr, "%s%llu calls failed closed on internal errors (see above)\n",
                 log_prefix_.c_str(), static_cast<unsigned long long>(s.handler_faults));
  if (with_stats || (tracing() && !config_.quiet))
    std::fprintf(
        stderr,
        "%sserved %llu notifications: %llu ioctl, %llu open "
        "(%llu brokered), %llu denied (%llu repeated denial lines not printed); handler %.1f "
        "us/ioctl, %.1f us/open, p50 %.1f us, p99 %.1f us\n",
        log_prefix_.c_str(), static_cast<unsigned long long>(s.ioctls + s.opens),
        static_cast<unsigned long long>(s.ioctls), static_cast<unsigned long long>(s.opens),
        static_cast<unsigned long long>(s.brokered), static_cast<unsigned long long>(s.denied),
        static_cast<unsigned long long>(s.repeated_denials),
        s.ioctl_phase_samples ? double(s.ns_ioctl) / 1e3 / double(s.ioctl_phase_samples) : 0.0,
        s.opens ? double(s.ns_open) / 1e3 / double(s.opens) : 0.0, double(s.p50_ns) / 1e3,
        double(s.p99_ns) / 1e3);
  const bool phases = with_stats && s.ioctl_phase_samples;
  if (phases) {
    const auto us = [&](uint64_t ns) { return double(ns) / 1e3 / double(s.ioctl_phase_samples); };
    const SessionStats::IoctlPhases& p = s.ioctl_ns;
    std::fprintf(stderr,
                 "%sper ioctl: fd lookup %.1f us, memory reads %.1f us, decode %.1f us, policy "
                 "%.1f us, answer %.1f us, trace %.1f us\n",
                 log_prefix_.c_str(), us(p.lookup), us(p.memory), us(p.decode), us(p.policy),
                 us(p.answer), us(p.trace));
  }
  if (ioctl_lsm_) {
    const IoctlLsm::Counts c = ioctl_lsm_->counts();
    if (with_stats || c.refused)
      std::fprintf(stderr,
                   "%sjudged in the kernel (BPF LSM): %llu untrapped call(s) allowed on granted "
                   "devices, %llu ioctl(s) refused (an ungranted device, or a request not allowed "
                   "on that device)%s\n",
                   log_prefix_.c_str(), static_cast<unsigned long long>(c.allowed),
                   static_cast<unsigned long long>(c.refused),
                   c.unreported ? (", " + std::to_string(c.unreported) +
                                   " of them not said (the refusals' ring was full)")
                                      .c_str()
                                : "");
  }
  if (with_stats && s.allowed_unread)
    std::fprintf(stderr,
                 "%s%llu trapped ioctl(s) allowed without reading their parameters (requests the "
                 "policy allows whatever they hold, on granted devices)\n",
                 log_prefix_.c_str(), static_cast<unsigned long long>(s.allowed_unread));
  if (with_stats && s.trap_copies_used)
    std::fprintf(stderr,
                 "%strap copies: %llu of %llu trapped ioctl(s) judged from the copy their caller "
                 "made at its trap; the rest were looked up by gdrproxy (no copy ready, the "
                 "copies still loading, or %llu rewritten while read)\n",
                 log_prefix_.c_str(), static_cast<unsigned long long>(s.trap_copies_used),
                 static_cast<unsigned long long>(s.ioctls),
                 static_cast<unsigned long long>(s.trap_copies_torn));
  if (with_stats && !kernel_allowed_.requests.empty())
    std::fprintf(stderr,
                 "%sin the kernel, never trapped: %zu ioctl requests the policy allows whatever "
                 "their parameters (%u UVM calls, %u NVIDIA escapes); their calls are not counted "
                 "above (--kernel-allow off traps them)\n",
                 log_prefix_.c_str(), kernel_allowed_.requests.size(), kernel_allowed_.uvm,
                 kernel_allowed_.frontend);
  if (!phases && s.denied && !config_.quiet)
    note(std::to_string(s.denied) + " device call(s) denied" +
         (s.repeated_denials ? " (" + std::to_string(s.repeated_denials) +
                                   " repeated denial lines not printed; --stats counts them)"
                             : ""));
}

// The caller as the observer saw it at its syscall's exit, in its own context. Its "host" ids are
// the supervisor's pid namespace's, as the observer reports them.
ProcessIdentity Session::identity_at_exit(const gdrproxy_exit_event& e) {
  ProcessIdentity who;
  who.host_tid = e.tid;
  who.host_tgid = e.tgid;
  who.ns_tid = e.ns_tid;
  who.ns_tgid = e.ns_tgid;
  who.pidns = e.pidns;
  who.comm.assign(e.comm, strnlen(e.comm, sizeof e.comm));
  return who;
}

GDRPROXY_HOT void Session::handle(const seccomp_notif& req) {
  // One ioctl in kPhaseSampleEvery is timed, in total and phase by phase: a clock read costs
  // 20-50 ns, which adds up on the enforce fast path.
  const bool sampled = req.data.nr == SYS_ioctl && stats_.ioctls % kPhaseSampleEvery == 0;
  // Every call's start is read, for the watchdog's deadline, for which the coarse clock (the last
  // tick's time: no clock-source read) does. The precise clock is read where a latency is
  // measured from the start: a traced call, an open, a timed ioctl.
  const bool timed = sampled || tracing() || req.data.nr != SYS_ioctl;
  const uint64_t t0 = timed ? monotonic_ns() : coarse_monotonic_ns();
  answered_ = false;
  inflight_.publish({nfd_, req.id, t0, req.pid, static_cast<int>(req.data.nr)});
  try {
    dispatch(req, t0, sampled);
  } catch (const std::exception& e) {
    ++stats_.handler_faults;
    std::fprintf(stderr, "%sinternal error handling %s of pid %llu, failed closed: %s\n",
                 log_prefix_.c_str(), req.data.nr == SYS_ioctl ? "an ioctl" : "an open",
                 static_cast<unsigned long long>(req.pid), printable(e.what()).c_str());
  } catch (...) {
    ++stats_.handler_faults;
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
      if (!sampled) return;
      const uint64_t total = record_latency(stats_.ns_ioctl, t0);
      ++stats_.ioctl_phase_samples;
      // What the phases above did not account for is the trace's (records, sinks, observer).
      IoctlPhases& p = stats_.ioctl_ns;
      const uint64_t accounted = (p.lookup - before.lookup) + (p.memory - before.memory) +
                                 (p.decode - before.decode) + (p.policy - before.policy) +
                                 (p.answer - before.answer);
      p.trace += total > accounted ? total - accounted : 0;
      return;
    }
    case SYS_open:
    case SYS_openat:
    case SYS_openat2:
    case SYS_creat: {
      ++stats_.opens;
      CallDecision d = handler_->open(req);
      carry_out(req, d, t0);
      record_latency(stats_.ns_open, t0);
      return;
    }
    case SYS_pidfd_getfd: {
      CallDecision d = handler_->pidfd_getfd(req);
      carry_out(req, d, t0);
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
    case CallDecision::Answer::kContinue:
      if (d.record && tracing())
        continue_observed(*d.record, req.id, static_cast<pid_t>(req.pid), t0, d.watch_writes);
      else
        answer_continue(req.id);
      return;
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
  if (tracing()) emit(std::move(*d.record));
}

// Lets a traced call run and registers its thread so the BPF observer completes the record at
// the syscall's exit; without an observer the record is written now, result unknown.
void Session::continue_observed(TraceRecord& r, uint64_t id, pid_t tid, uint64_t t0,
                                bool watch_rdma_cm) {
  const uint32_t index = observer_ ? pending_.take() : 0;
  if (observer_ && observer_->expect(tid, r.seq, cookie_of(index), r.call.result_regions[0],
                                     r.call.result_regions[1], watch_rdma_cm)) {
    // The result goes by the cookie to this session, to this entry, which is filled and
    // published before the call runs: its result cannot come before it.
    if (watch_rdma_cm) engine_.route_tgid(r.who.host_tgid, this);
    const uint64_t seq = r.seq;
    PendingResults::Call& p = pending_.at(index);
    p.record = std::move(r);
    p.t0 = t0;
    p.tid = static_cast<uint32_t>(tid);
    pending_.publish(index);
    if (answer_continue(id) != 0) {
      observer_->forget(tid);
      // The call never ran, so no result claims it; a sweep may have given it up meanwhile.
      if (PendingResults::Call* c = pending_.claim(index, seq)) {
        TraceRecord gone = std::move(c->record);
        pending_.release(index);
        // Its tid alone: /proc would now describe whoever reuses it.
        gone.note = "caller gone before the call ran";
        emit(std::move(gone));
      }
    }
    return;
  }
  if (observer_) pending_.release(index);
  answer_continue(id);
  r.note = "result not observed";
  if (!r.who.host_tgid) r.who = inputs_.identity(tid);
  emit(std::move(r));
}

// A command the caller wrote to its own rdma_cm or uverbs fd, seen by the BPF observer. Observed
// only: the write was never trapped (README, Security model). A uverbs command is judged by the
// policy like its ioctl encodings; a would-be denial is reported, not enforced.
void Session::on_cm_write(const gdrproxy_exit_event& e) {
  const ProcessIdentity who = identity_at_exit(e);
  // The fd was marked at the caller's open. If it now names another file, it was closed and its
  // number reused: stop watching it. If it is gone (closed, or the caller is exiting) the write
  // still happened on the marked fd, whose class was recorded when its open returned.
  const DeviceNode* node = nullptr;
  const bool open_now = inputs_.inspect_fd(static_cast<pid_t>(e.tid), static_cast<int>(e.fd), node);
  const auto watched = watched_fds_.find({who.host_tgid, e.fd});
  if (open_now && (!node || (node->device_class != DeviceClass::kRdmaCm &&
                             node->device_class != DeviceClass::kUverbs))) {
    if (observer_) observer_->unwatch_cm_fd(who.host_tgid, e.fd);
    if (watched != watched_fds_.end()) watched_fds_.erase(watched);
    return;
  }
  if (!node) {
    const bool uverbs = watched != watched_fds_.end() && watched->second == DeviceClass::kUverbs;
    node = uverbs ? &kAnyUverbs : &kAnyRdmaCm;
  }
  BufferMemory mem;
  constexpr uint64_t kAt = 0x10000;
  mem.map(kAt, std::vector<uint8_t>(e.region0, e.region0 + e.len0));
  TraceRecord r;
  r.seq = engine_.next_seq();
  r.wall_time = wall_seconds();
  r.who = who;
  r.syscall = "write";
  r.fd = static_cast<int>(e.fd);
  r.device = node->name;
  r.decision = "observed";
  if (node->device_class == DeviceClass::kUverbs) {
    r.call = decode_uverbs_write(kAt, e.len0, mem);
    const Verdict v = config_.policy.evaluate(r.call);
    if (v.action == Action::kDeny) {
      r.decision = "observed (policy would deny: write() commands are not trapped)";
      r.reason = v.reason;
      if (handler_->denials().first(who.host_tgid, node->name, "write " + r.call.name))
        std::fprintf(stderr,
                     "%snot enforceable: pid %u (ns pid %u) sent %s to %s as write(), "
                     "which the policy denies (%s); write() commands are observed, not trapped\n",
                     log_prefix_.c_str(), who.host_tid, who.ns_tid, printable(r.call.name).c_str(),
                     node->name.c_str(), printable(v.reason).c_str());
    }
  } else {
    r.call = decode_rdma_cm_write(kAt, e.len0, mem);
  }
  if (e.ret < 0) {
    r.ret = -1;
    r.err = static_cast<int>(-e.ret);
  } else {
    r.ret = e.ret;
  }
  r.latency_us = e.exit_ns > e.enter_ns ? double(e.exit_ns - e.enter_ns) / 1e3 : 0.0;
  emit(std::move(r));
}

void Session::on_exit_event(const gdrproxy_exit_event& e) {
  if (e.kind == GDRPROXY_EVENT_CM_WRITE) {
    std::lock_guard<std::mutex> lock(mu_);  // its fd lookup and denial lines are the receivers'
    on_cm_write(e);
    return;
  }
  // The entry the cookie names, if it still waits for this very call (not given up and reused).
  const uint32_t index = static_cast<uint32_t>(e.cookie);
  PendingResults::Call* call = pending_.claim(index, e.seq);
  if (!call) return;
  TraceRecord& r = call->record;
  const uint64_t t0 = call->t0;
  if (!r.who.host_tgid) r.who = identity_at_exit(e);
  if (e.ret < 0) {
    r.ret = -1;
    r.err = static_cast<int>(-e.ret);
  } else {
    r.ret = e.ret;
  }
  r.latency_us = e.exit_ns > t0 ? double(e.exit_ns - t0) / 1e3 : 0.0;
  if (e.ret >= 0) {
    std::span<const uint8_t> r0(e.region0, e.len0), r1(e.region1, e.len1);
    switch (r.call.device_class) {
      case DeviceClass::kUverbs:
        decode_uverbs_result(r.call, r0, r1, r.out);
        break;
      case DeviceClass::kNvidiaFrontend:
      case DeviceClass::kNvidiaUvm:
        decode_nvidia_result(r.call, r0, r1, r.out);
        break;
      default:
        break;
    }
  }
  // A granted open of a watched kind returned an fd: remember its class for its writes.
  if (r.call.name == "open" && e.ret >= 0 &&
      (r.call.device_class == DeviceClass::kUverbs ||
       r.call.device_class == DeviceClass::kRdmaCm)) {
    // Bounded: past the cap (a tenant holding that many fds open) new fds go unwatched.
    if (watched_fds_.size() < kMaxWatchedFds)
      watched_fds_[{r.who.host_tgid, static_cast<uint32_t>(e.ret)}] = r.call.device_class;
    else if (observer_)
      observer_->unwatch_cm_fd(r.who.host_tgid, static_cast<uint32_t>(e.ret));
  }
  emit(std::move(r));
  pending_.release(index);
}

// A record still waiting although its thread's registration is no longer armed: the exit
// happened. If its result is not in the ring either (drained since the previous sweep), the
// kernel skipped the observer's program at that exit, and it never comes: given up at the
// second sweep that finds it so, instead of waiting for the session's end (the thread lives on).
void Session::give_up_unreported_results() {
  if (!observer_) return;
  std::set<uint64_t> unreported;
  for (const PendingResults::Waiting& w : pending_.waiting()) {
    if (observer_->still_armed(w.tid, w.seq)) continue;
    if (!unreported_at_last_sweep_.contains(w.seq)) {
      unreported.insert(w.seq);
      continue;
    }
    if (write_without_result(
            w, "result not observed: the kernel did not run the observer at its return"))
      ++stats_.results_unobserved;
  }
  unreported_at_last_sweep_ = std::move(unreported);
}

bool Session::write_without_result(const PendingResults::Waiting& w, std::string note) {
  PendingResults::Call* c = pending_.claim(w.index, w.seq);
  if (!c) return false;
  c->record.note = std::move(note);
  emit(std::move(c->record));
  pending_.release(w.index);
  return true;
}

void Session::finish(const std::string& why) {
  for (const PendingResults::Waiting& w : pending_.waiting()) {
    if (observer_) observer_->forget(w.tid);
    if (write_without_result(w, why)) ++stats_.results_unobserved;
  }
  if (observer_)
    for (const auto& [key, cls] : watched_fds_) observer_->unwatch_cm_fd(key.first, key.second);
  watched_fds_.clear();
  // Bounded: a trace file that no longer takes bytes must not hold the exit.
  if (json_out_) json_out_->finish(std::chrono::seconds(5));
}

void Session::emit(TraceRecord&& r) {
  if (config_.trace_text) std::fprintf(stderr, "%s\n", format_text(r).c_str());
  // Formatted and written by the writer's thread; flushed each second (the sweep) and at exit.
  if (json_out_) json_out_->push(std::move(r));
}

}  // namespace gdrproxy::proxy
