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

uint64_t monotonic_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_nsec);
}

// CLOCK_MONOTONIC as of the last tick: never ahead of monotonic_ns(), behind it by less than a
// tick, and read without the clock source (a few ns where monotonic_ns() costs 20-50).
uint64_t coarse_monotonic_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_nsec);
}

double wall_seconds() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return double(t.tv_sec) + double(t.tv_nsec) / 1e9;
}

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

// A call no decoder names (an ungranted device's, another driver's, one refused in the kernel):
// its class and request, named IOCTL_0x<request>.
DecodedCall undecoded_call(DeviceClass cls, uint32_t cmd) {
  DecodedCall call;
  call.device_class = cls;
  call.cmd = cmd;
  char name[32];
  std::snprintf(name, sizeof name, "IOCTL_0x%08x", cmd);
  call.name = name;
  return call;
}

}  // namespace

bool every_gpu_granted(const DeviceCatalog& catalog, const Grants& grants) {
  for (const DeviceNode& n : catalog.nodes())
    if (n.device_class == DeviceClass::kNvidiaFrontend && n.name != "nvidiactl" &&
        !grants.granted(n))
      return false;
  return true;
}

// What an ioctl's argument says, read from the caller's memory: the decoded call and, for a
// dma-buf registration the policy restricts, the dma-buf's provenance. Both reads can block on
// the tenant (its argument may lie in a mapping of a hung FUSE file; the dma-buf fd may be such a
// file); everything the policy then judges comes from here.
struct IoctlReading {
  DecodedCall call;
  std::optional<DmabufVerdict> dmabuf;
  // Everything read came from the trap copy (the device and the argument's bytes, copied in the
  // caller's own context while it waited in this notification): nothing to re-validate.
  bool from_trap_copy_only = false;
};

Session::Session(Engine& engine, SessionConfig config)
    : engine_(engine),
      config_(std::move(config)),
      catalog_held_(engine.current_catalog()),
      catalog_(*catalog_held_),
      broker_(catalog_, config_.grants, config_.policy.open_errno(), &engine.live_catalog()),
      log_prefix_(config_.name.empty() ? "gdrproxy: "
                                       : "gdrproxy: [" + printable(config_.name) + "] "),
      release_timer_(io_),
      sweep_(io_) {
  reading_ = std::make_unique<IoctlReading>();
  UniqueFd hangups(::epoll_create1(EPOLL_CLOEXEC));
  if (!hangups) throw_errno("cannot create the epoll set that sees listeners hang up", errno);
  hangups_ = std::make_unique<asio::posix::stream_descriptor>(io_, hangups.release());
  if (config_.trace_json) {
    UniqueFd f(::open(config_.trace_json->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
    if (!f) throw_errno("cannot write trace file " + *config_.trace_json, errno);
    json_out_ = std::make_unique<JsonTraceWriter>(std::move(f));
  }
  setup_nvidia();
  all_gpus_granted_ = every_gpu_granted(catalog_, config_.grants);
  setup_kernel_judgement();
  const ClassPolicy* uverbs = config_.policy.class_policy(DeviceClass::kUverbs);
  if (uverbs) dmabuf_exporters_ = uverbs->dmabuf_exporters;
  if (tracing()) {
    std::string why;
    observer_ = engine_.observer(why);
    if (!observer_) note("results of allowed calls will not be shown (" + why + ")");
  }
  arm_sweep();
  watch_hangups();
  id_ = engine_.attach(this);  // last: a constructor that throws leaves no route behind
}

void Session::setup_kernel_judgement() {
  const bool untrapped_ok =
      config_.kernel_allow && config_.mode == Mode::kEnforce && !tracing() && nv_enforce_;
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
  if (config_.mode != Mode::kEnforce || tracing() || !nv_enforce_ || !engine_.nvidia().abi) return;
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
  const DeviceNode* node = device(f.rdev);
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

void Session::setup_nvidia() {
  const NvidiaDriver& nv = engine_.nvidia();
  if (nv.known) return;
  bool have_nvidia = false;
  for (const auto& n : catalog_.nodes())
    if (n.device_class == DeviceClass::kNvidiaFrontend || n.device_class == DeviceClass::kNvidiaUvm)
      have_nvidia = true;
  // No NVIDIA driver loaded: whatever answers on /dev/nvidia* nodes is not NVIDIA's, so there is
  // no driver version to disagree with. Calls are named and policed with the newest tables.
  if (!have_nvidia || !nv.loaded) return;
  if (config_.mode == Mode::kEnforce && !config_.allow_unknown_nvidia_driver)
    throw Error(
        "NVIDIA driver " + nv.version.value_or("(version unreadable)") +
        " is not in this build's ABI tables (newest known: " + std::string(nv.abi->version) +
        "): refusing to enforce a policy on calls it cannot name; pass "
        "--allow-unknown-nvidia-driver to run NVIDIA calls trace-only");
  nv_enforce_ = false;
  note("NVIDIA driver " + nv.version.value_or("(version unknown)") +
       " is not in this build's ABI tables: NVIDIA calls are traced with " +
       std::string(nv.abi->version) + " names and never denied (trace-only)");
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
  s.denied = denials_.total();
  s.repeated_denials = denials_.repeats();
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

const ProcessIdentity& Session::identity(pid_t tid) {
  struct stat st {};
  ::stat(("/proc/" + std::to_string(tid)).c_str(), &st);
  auto it = identities_.find(tid);
  if (it == identities_.end() || it->second.first != st.st_ino) {
    if (identities_.size() > 4096) identities_.clear();
    it = identities_.insert_or_assign(tid, std::make_pair(st.st_ino, read_process_identity(tid)))
             .first;
  }
  return it->second.second;
}

TraceRecord Session::begin_record(const seccomp_notif& req, const char* syscall, bool who_at_exit) {
  TraceRecord r;
  r.seq = engine_.next_seq();
  r.wall_time = wall_seconds();
  if (who_at_exit)
    r.who.host_tid = req.pid;  // the rest comes with the exit event (host_tgid 0 until then)
  else
    r.who = identity(static_cast<pid_t>(req.pid));
  r.syscall = syscall;
  return r;
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
        SessionStats::IoctlPhases*& p;
        ~Reset() { p = nullptr; }
      } reset{phases_};
      const SessionStats::IoctlPhases before = stats_.ioctl_ns;
      handle_ioctl(req, t0);
      if (!sampled) return;
      const uint64_t total = record_latency(stats_.ns_ioctl, t0);
      ++stats_.ioctl_phase_samples;
      // What the phases above did not account for is the trace's (records, sinks, observer).
      SessionStats::IoctlPhases& p = stats_.ioctl_ns;
      const uint64_t accounted = (p.lookup - before.lookup) + (p.memory - before.memory) +
                                 (p.decode - before.decode) + (p.policy - before.policy) +
                                 (p.answer - before.answer);
      p.trace += total > accounted ? total - accounted : 0;
      return;
    }
    case SYS_open:
    case SYS_openat:
    case SYS_openat2:
    case SYS_creat:
      ++stats_.opens;
      handle_open(req, t0);
      record_latency(stats_.ns_open, t0);
      return;
    case SYS_pidfd_getfd:
      handle_pidfd_getfd(req, t0);
      return;
    default:
      answer_continue(req.id);
  }
}

namespace {

// Fills `out`, whose storage is kept from call to call.
GDRPROXY_HOT void read_ioctl(IoctlReading& out, pid_t pid, const DeviceNode& node, uint32_t cmd,
                             uint64_t arg, DecodeDepth depth, const NvidiaDriverAbi* abi,
                             const std::vector<std::string>& exporters, const TrapCopy* copy,
                             uint64_t* memory_ns) {
  ProcessMemory mem(pid, memory_ns);
  if (copy && !copy->bytes().empty()) mem.prime(copy->arg(), copy->bytes());
  const DeviceClass cls = node.device_class;
  switch (cls) {
    case DeviceClass::kUverbs:
      // Driver-namespace ids are named and judged under the provider of the node's device.
      decode_uverbs_ioctl(out.call, cmd, arg, mem, depth, node.rdma_driver);
      break;
    case DeviceClass::kNvidiaFrontend:
      decode_nvidia_frontend_ioctl(out.call, cmd, arg, mem, *abi, depth);
      break;
    case DeviceClass::kNvidiaUvm:
      decode_nvidia_uvm_ioctl(out.call, cmd, arg, mem, *abi, depth);
      break;
    default:
      out.call = undecoded_call(cls, cmd);
  }
  out.dmabuf.reset();
  if (out.call.keys.dmabuf_fd && !exporters.empty()) {
    out.dmabuf = check_dmabuf_fd(pid, *out.call.keys.dmabuf_fd, exporters);
    // A second dma-buf (a QP's send and receive buffers): the call passes only if both do.
    if (out.dmabuf->allowed && out.call.keys.dmabuf_fd2)
      out.dmabuf = check_dmabuf_fd(pid, *out.call.keys.dmabuf_fd2, exporters);
  }
  out.from_trap_copy_only = copy && !mem.read_remotely() && !out.dmabuf;
}

}  // namespace

GDRPROXY_HOT void Session::handle_ioctl(const seccomp_notif& req, uint64_t t0) {
  const int fd = static_cast<int>(req.data.args[0]);
  const uint32_t cmd = static_cast<uint32_t>(req.data.args[1]);
  const uint64_t arg = req.data.args[2];
  // The device behind the fd decides the class and is checked against the grants, the same way
  // with or without a trace: the request number alone says nothing about which driver gets it
  // (NVIDIA ignores the type byte; any fd can carry any number).
  // The caller's context may have copied both the device and the argument's first bytes at its
  // trap (proxy/observe/trap_copy.h): then neither is asked of the kernel again.
  std::optional<TrapCopy> copy;
  if (const TrapCopies* copies = engine_.trap_copies()) {
    copy = copies->take(req);
    ++(copy ? stats_.trap_copies_used : stats_.trap_copies_missed);
  }
  SessionStats::IoctlPhases& ph = stats_.ioctl_ns;
  const DeviceNode* node = nullptr;
  // At most twice: a copy rewritten while its bytes were read (its caller interrupted and
  // trapped again, or another thread of the same slot) is dropped, and the call looked up
  // without it.
  for (;;) {
    if (!copy)
      node = device_of_fd(static_cast<pid_t>(req.pid), fd);
    else if (copy->has_file() && S_ISCHR(copy->mode()))
      node = device(copy->rdev());
    else
      node = nullptr;
    const uint64_t t_read = phases_ ? monotonic_ns() : 0;
    if (phases_) ph.lookup += t_read - t0;
    if (!node) {
      // Not one of our devices (the filter matches by number only): let it be.
      answer_continue(req.id);
      return;
    }
    if (!config_.grants.granted(*node)) {
      // An fd of an ungranted device (inherited, passed over a socket, or opened around the
      // broker) is refused whatever the mode: grants are never advisory.
      refuse_ungranted(
          req, fd, *node, undecoded_call(node->device_class, cmd),
          node->uncatalogued ? ungranted_reason(*node) : "device " + node->name + " is not granted",
          t0);
      return;
    }
    // A request the policy allows whatever its parameters, on a granted node of its class: no
    // read, no decode (enforce mode without a trace only; see unread_uvm_).
    const std::vector<uint32_t>* unread =
        node->device_class == DeviceClass::kNvidiaUvm        ? &unread_uvm_
        : node->device_class == DeviceClass::kNvidiaFrontend ? &unread_frontend_
                                                             : nullptr;
    if (unread && std::binary_search(unread->begin(), unread->end(), cmd)) {
      ++stats_.allowed_unread;
      answer_continue(req.id);
      return;
    }
    // Without a trace only what the policy matches on is decoded.
    const DecodeDepth depth = tracing() ? DecodeDepth::kFull : DecodeDepth::kPolicy;
    // The reads can block on the tenant (its argument may lie in a mapping of a file on a hung
    // FUSE mount): they stall this session's thread only, and the watchdog answers at the
    // deadline.
    uint64_t memory = 0;
    IoctlReading& reading = *reading_;
    read_ioctl(reading, static_cast<pid_t>(req.pid), *node, cmd, arg, depth, engine_.nvidia().abi,
               dmabuf_exporters_, copy ? &*copy : nullptr, phases_ ? &memory : nullptr);
    if (phases_) {
      const uint64_t read_ns = monotonic_ns() - t_read;
      ph.memory += memory;
      ph.decode += read_ns > memory ? read_ns - memory : 0;
    }
    if (!copy || copy->unchanged()) {
      decide_ioctl(req, *node, reading, t0);
      return;
    }
    copy.reset();
    --stats_.trap_copies_used;
    ++stats_.trap_copies_missed;
    ++stats_.trap_copies_torn;
  }
}

GDRPROXY_HOT void Session::decide_ioctl(const seccomp_notif& req, const DeviceNode& node,
                                        IoctlReading& reading, uint64_t t0) {
  const int fd = static_cast<int>(req.data.args[0]);
  DecodedCall& call = reading.call;
  SessionStats::IoctlPhases& ph = stats_.ioctl_ns;
  const uint64_t t_policy = phases_ ? monotonic_ns() : 0;
  // What was read is only trustworthy if the caller is still the one that trapped (its tid may
  // have died and been reused). The answer cannot go astray: the kernel takes it only for this
  // notification, and a dead caller's is gone. So the check is paid only where something else
  // rests on what was read: a trace record, a printed line, a refusal.
  const auto still_valid = [&] {
    const uint64_t t = phases_ ? monotonic_ns() : 0;
    const bool valid = notif_id_valid(nfd_, req.id);
    if (phases_) ph.answer += monotonic_ns() - t;
    return valid;
  };
  if (call.keys.nv_device_instance && !all_gpus_granted_) {
    // A device object names its GPU by instance, through whichever frontend fd: the grant is
    // checked on the GPU the driver says that instance is.
    std::string why = ungranted_gpu(*call.keys.nv_device_instance);
    if (!why.empty()) {
      if (still_valid()) refuse_ungranted(req, fd, node, std::move(call), why, t0);
      return;
    }
  }
  Verdict v = config_.policy.evaluate(call, tracing());
  if (v.action == Action::kAllow && reading.dmabuf) {
    // GPUDirect: the registered dma-buf must come from a granted GPU.
    if (!reading.dmabuf->allowed) {
      v.action = Action::kDeny;
      v.err = config_.policy.class_policy(DeviceClass::kUverbs)->err;
      v.log = true;
      v.reason = "uverbs dma-buf provenance: " + reading.dmabuf->reason;
    } else if (tracing()) {
      call.args.push_back({"dmabuf", reading.dmabuf->reason});
    }
  }
  if (phases_) ph.policy += monotonic_ns() - t_policy;
  // An allowed call traced from its trap copy alone needs no check: its bytes and device were
  // copied by the caller itself during this notification, and its record's caller comes from the
  // observer's exit event, in the caller's own context. A refusal is checked all the same: its
  // printed line names the caller from /proc.
  if (v.action == Action::kAllow && !tracing()) {
    // Enforce's common case: nothing to record, nothing rests on what was read.
    answer_continue(req.id);
    return;
  }
  const bool proven = reading.from_trap_copy_only && observer_ && v.action == Action::kAllow;
  if (!proven && !still_valid()) return;
  TraceRecord r;
  if (tracing() || (v.action == Action::kDeny && v.log)) {
    // An allowed call's record gets its caller from the observer's exit event, read in the
    // caller's own context: no /proc read on the hot path.
    r = begin_record(req, "ioctl", observer_ && v.action == Action::kAllow);
    r.fd = fd;
    r.device = node.name;
    r.call = std::move(call);
    r.reason = v.reason;
  }
  finish_call(r, node, v, req.id, static_cast<pid_t>(req.pid), t0);
}

// Refuses a call on a device (or naming a GPU) the sandbox was not granted, whatever the mode:
// grants are never advisory.
void Session::refuse_ungranted(const seccomp_notif& req, int fd, const DeviceNode& node,
                               DecodedCall call, const std::string& reason, uint64_t t0) {
  TraceRecord r = begin_record(req, "ioctl");
  r.fd = fd;
  r.device = node.name;
  r.call = std::move(call);
  r.reason = reason;
  r.decision = "deny";
  r.ret = -1;
  r.err = config_.policy.open_errno();
  // The line is written before the caller is answered: it precedes whatever the caller prints.
  if (denials_.first(r.who.host_tgid, node.name, r.reason))
    std::fprintf(stderr, "%sdenied %s on %s by pid %u (ns pid %u): %s -> %s\n", log_prefix_.c_str(),
                 printable(r.call.name).c_str(), node.path.c_str(), r.who.host_tid, r.who.ns_tid,
                 printable(r.reason).c_str(), errno_name(r.err));
  answer_error(req.id, r.err);
  r.latency_us = double(monotonic_ns() - t0) / 1e3;
  if (tracing()) emit(std::move(r));
}

// Why NVIDIA device instance `instance` may not be used here (empty: it is a granted GPU). The
// driver is asked at each call, since instances are given out as GPUs attach; anything it cannot
// answer is a refusal (the driver itself maps an unpopulated instance to its first GPU).
std::string Session::ungranted_gpu(uint32_t instance) {
  const std::string what = "NV01_DEVICE_0 device instance " + std::to_string(instance);
  const NvidiaDriver& nv = engine_.nvidia();
  if (!nv.version)
    return what + ": the NVIDIA driver version is unknown, so its GPU cannot be told";
  std::string why;
  const auto gpus = query_nvidia_gpus(nv.ctl_path, *nv.version, why);
  if (!gpus) return what + ": cannot ask the driver which GPU it is (" + why + ")";
  const NvidiaGpu* g = gpu_of_device_instance(*gpus, instance);
  if (!g) return what + " is no attached GPU";
  const DeviceNode* n = catalog_.find(makedev(nv.major, g->minor));
  if (!n || !config_.grants.granted(*n))
    return what + " is GPU " + (n ? n->name : "minor " + std::to_string(g->minor)) +
           ", which is not granted";
  return {};
}

// Answers an allowed or denied device call and completes its trace record (now, or when the BPF
// observer reports the result).
void Session::finish_call(TraceRecord& r, const DeviceNode& node, const Verdict& v, uint64_t id,
                          pid_t tid, uint64_t t0) {
  const bool nv = node.device_class == DeviceClass::kNvidiaFrontend ||
                  node.device_class == DeviceClass::kNvidiaUvm;
  const bool deny =
      v.action == Action::kDeny && config_.mode == Mode::kEnforce && (!nv || nv_enforce_);
  if (deny) {
    r.decision = "deny";
    r.ret = -1;
    r.err = v.err;
    // Written before the answer, so it precedes whatever the caller prints about its error.
    // An NVIDIA RM call names its command or class, so that a rule can be written for it; each
    // command refused gets its own line once.
    std::string what = r.call.name;
    if (nv && engine_.nvidia().abi) {
      const std::string subject = nvidia_call_subject(r.call, *engine_.nvidia().abi);
      if (!subject.empty()) what += " " + subject;
    }
    if (denials_.first(r.who.host_tgid, node.name, v.reason + " " + what) && v.log) {
      std::fprintf(stderr, "%sdenied %s %s by pid %u (ns pid %u): %s -> %s\n", log_prefix_.c_str(),
                   node.name.c_str(), printable(what).c_str(), r.who.host_tid, r.who.ns_tid,
                   printable(v.reason).c_str(), errno_name(v.err));
    }
    answer_error(id, v.err);
    r.latency_us = double(monotonic_ns() - t0) / 1e3;
    if (tracing()) emit(std::move(r));
    return;
  }
  r.decision = v.action == Action::kDeny ? "allow (would deny: trace mode)" : "allow";
  if (v.action == Action::kDeny && v.log)
    std::fprintf(stderr, "%s%s, would deny %s %s: %s\n", log_prefix_.c_str(),
                 config_.mode == Mode::kTrace ? "trace mode" : "driver not in the ABI tables",
                 node.name.c_str(), printable(r.call.name).c_str(), printable(v.reason).c_str());
  if (!tracing()) {
    answer_continue(id);
    return;
  }
  continue_observed(r, id, tid, t0, false);
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
  if (!r.who.host_tgid) r.who = identity(tid);
  emit(std::move(r));
}

namespace {

// The pid (in our pid namespace) a pidfd refers to, from /proc/self/fdinfo; -1 when it is not a
// pidfd or its process is gone.
pid_t pid_of_pidfd(int fd) {
  std::ifstream in("/proc/self/fdinfo/" + std::to_string(fd));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Pid:", 0) == 0)
      return static_cast<pid_t>(std::strtol(line.c_str() + 4, nullptr, 10));
  return -1;
}

}  // namespace

// pidfd_getfd(pidfd, targetfd, flags) for the caller: the target is the process behind the
// caller's pidfd (copied out of the caller), and must belong to this sandbox's pid namespace (or
// a group peer's) and have exec'd a program of its container, not be a runtime's helper; the fd
// is then taken by a prober with the caller's own credentials (proxy/broker/fd_broker.h), so the
// kernel refuses what the caller could not take itself, and installed in the caller. Without
// brokering the call is refused: an OCI profile always traps it.
void Session::handle_pidfd_getfd(const seccomp_notif& req, uint64_t t0) {
  const int caller_pidfd_nr = static_cast<int>(req.data.args[0]);
  const int target_fd = static_cast<int>(req.data.args[1]);
  TraceRecord r = begin_record(req, "pidfd_getfd");
  r.call.name = "pidfd_getfd";
  r.call.args = {{"pidfd", std::to_string(caller_pidfd_nr)},
                 {"targetfd", std::to_string(target_fd)}};
  auto finish = [&](int err, const std::string& reason) {
    r.decision = "deny";
    r.ret = -1;
    r.err = err;
    r.reason = reason;
    if (denials_.first(r.who.host_tgid, "pidfd_getfd", reason))
      std::fprintf(stderr, "%sdenied pidfd_getfd by pid %u (ns pid %u): %s -> %s\n",
                   log_prefix_.c_str(), r.who.host_tid, r.who.ns_tid, printable(reason).c_str(),
                   errno_name(err));
    answer_error(req.id, err);
  };
  const ino_t own = pid_namespace_of(::getpid());
  UniqueFd caller, target;
  if (!config_.broker_pidfd_getfd) {
    finish(EPERM, "pidfd_getfd is not brokered for this sandbox");
  } else if (req.data.args[2] != 0) {
    finish(EINVAL, "pidfd_getfd is not brokered with these flags");
  } else if (!pidns_ || *pidns_ == own) {
    finish(EPERM, "this sandbox has no pid namespace of its own to broker pidfd_getfd within");
  } else if (!(caller = UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, req.pid, 0))))) {
    finish(ESRCH, "the caller is gone");
  } else if (!(target = UniqueFd(static_cast<int>(
                   ::syscall(SYS_pidfd_getfd, caller.get(), caller_pidfd_nr, 0))))) {
    finish(EBADF, "the caller's fd " + std::to_string(caller_pidfd_nr) + " cannot be read");
  } else {
    const pid_t tpid = pid_of_pidfd(target.get());
    const ino_t tns = tpid > 0 ? pid_namespace_of(tpid) : 0;
    std::optional<std::string> helper = tpid > 0 ? runtime_helper_reason(tpid) : std::nullopt;
    // The pidfd pins the process: if it still signals as alive after the namespace and program
    // were read, they were of that process and not of a reused pid.
    const bool alive =
        tpid > 0 && ::syscall(SYS_pidfd_send_signal, target.get(), 0, nullptr, 0) == 0;
    const std::string who = "pid " + std::to_string(tpid);
    if (tpid <= 0 || !alive) {
      finish(tpid == -1 ? ESRCH : EBADF,
             "fd " + std::to_string(caller_pidfd_nr) + " is not a pidfd of a living process");
    } else if (tns != *pidns_ && (tns == own || !is_peer_ || !is_peer_(tns))) {
      finish(EPERM, who + " is outside this sandbox" + (is_peer_ ? " and its group" : ""));
    } else if (helper) {
      finish(EPERM, who + ": " + *helper);
    } else if (!notif_id_valid(nfd_, req.id)) {
      return;
    } else {
      // The caller is blocked in this call (its id was valid just now): its thread's
      // credentials are the ones the prober takes.
      TakenFd got = take_fd_as_caller(static_cast<pid_t>(req.pid), target.get(), target_fd);
      if (!got.fd) {
        finish(got.err, "fd " + std::to_string(target_fd) + " of " + who + ": " + got.why);
      } else {
        const int fd = answer_fd(req.id, got.fd.get(), true);  // pidfd_getfd sets O_CLOEXEC
        r.decision = "broker";
        r.ret = fd >= 0 ? fd : -1;
        if (fd < 0) r.err = -fd;
        ++stats_.brokered;
      }
    }
  }
  r.latency_us = double(monotonic_ns() - t0) / 1e3;
  if (tracing()) emit(std::move(r));
}

void Session::handle_open(const seccomp_notif& req, uint64_t t0) {
  // Path resolution walks the tenant's filesystems (a FUSE lookup may never be answered): on
  // this session's thread only, and the watchdog answers at the deadline.
  ProcessMemory mem(static_cast<pid_t>(req.pid));
  OpenCall call;
  const bool read_ok =
      OpenBroker::read_call(static_cast<pid_t>(req.pid), req.data.nr,
                            reinterpret_cast<const uint64_t*>(req.data.args), call, mem);
  OpenDecision d;
  if (read_ok) d = broker_.decide(call, mem);
  complete_open(req, read_ok, call, d, t0);
}

void Session::complete_open(const seccomp_notif& req, bool read_ok, const OpenCall& call,
                            OpenDecision& d, uint64_t t0) {
  if (!read_ok) {
    answer_continue(req.id);
    return;
  }
  // The brokered host fd is closed on every way out of here, a throw included.
  UniqueFd host_fd = std::move(d.host_fd);
  if (!notif_id_valid(nfd_, req.id)) return;
  if (d.kind == OpenDecision::Kind::kPass) {
    answer_continue(req.id);
    return;
  }
  TraceRecord r = begin_record(req, req.data.nr == SYS_openat2 ? "openat2" : "openat");
  r.device = d.node ? d.node->name : quote_text(d.path);
  r.call.device_class = d.node ? d.node->device_class : DeviceClass::kUnknown;
  r.call.name = "open";
  char flags[24];
  std::snprintf(flags, sizeof flags, "0%llo", static_cast<unsigned long long>(call.flags));
  r.call.args = {{"path", quote_text(d.path)}, {"flags", flags}};
  r.reason = d.reason;
  if (d.kind == OpenDecision::Kind::kCallerOpens) {
    // Granted, and the caller opens it itself (Landlock allows exactly this node). The result
    // is the caller's own: observed at syscall exit when tracing.
    r.decision = "allow";
    if (!tracing()) {
      answer_continue(req.id);
      return;
    }
    // For rdma_cm the observer also starts watching the new fd's writes (rdma_cm commands).
    continue_observed(r, req.id, static_cast<pid_t>(req.pid), t0,
                      d.node->device_class == DeviceClass::kRdmaCm ||
                          d.node->device_class == DeviceClass::kUverbs);
    return;
  }
  if (d.kind == OpenDecision::Kind::kDeny || d.kind == OpenDecision::Kind::kUndecidable ||
      !host_fd) {
    r.decision = "deny";
    r.ret = -1;
    r.err = d.err;
    if (d.kind == OpenDecision::Kind::kDeny) {
      if (denials_.first(r.who.host_tgid, d.node->path, d.reason))
        std::fprintf(stderr, "%sdenied open of %s (%s) by pid %u (ns pid %u): %s -> %s\n",
                     log_prefix_.c_str(), quote_text(d.path).c_str(), d.node->path.c_str(),
                     r.who.host_tid, r.who.ns_tid, printable(d.reason).c_str(), errno_name(d.err));
    } else if (d.kind == OpenDecision::Kind::kUndecidable) {
      if (denials_.first(r.who.host_tgid, d.path, d.reason))
        std::fprintf(stderr, "%sdenied open of %s by pid %u (ns pid %u): %s -> %s\n",
                     log_prefix_.c_str(), quote_text(d.path).c_str(), r.who.host_tid, r.who.ns_tid,
                     printable(d.reason).c_str(), errno_name(d.err));
    }
    answer_error(req.id, d.err);  // after the line, which then precedes the caller's reaction
  } else {
    const int fd = answer_fd(req.id, host_fd.get(), (call.flags & O_CLOEXEC) != 0);
    host_fd.reset();
    r.decision = "broker";
    ++stats_.brokered;
    if (fd >= 0) {
      r.ret = fd;
    } else {
      r.ret = -1;
      r.err = -fd;
      r.note = "fd injection failed";
    }
  }
  r.latency_us = double(monotonic_ns() - t0) / 1e3;
  if (tracing()) emit(std::move(r));
}

bool Session::inspect_fd(pid_t tid, int fd, const DeviceNode*& node) const {
  // Never asks a FUSE server (ProcFdDirs::stat_fd): the number may now be a file on a hung mount.
  struct statx stx {};
  node = nullptr;
  if (!fd_dirs_.stat_fd(tid, fd, stx)) return false;
  if (S_ISCHR(stx.stx_mode)) node = device(makedev(stx.stx_rdev_major, stx.stx_rdev_minor));
  return true;
}

GDRPROXY_HOT const DeviceNode* Session::device(dev_t rdev) const {
  if (const DeviceNode* n = catalog_.find(rdev)) return n;
  return engine_.live_catalog().uncatalogued(rdev);
}

const DeviceNode* Session::device_of_fd(pid_t tid, int fd) const {
  const DeviceNode* node = nullptr;
  inspect_fd(tid, fd, node);
  return node;
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
  const bool open_now = inspect_fd(static_cast<pid_t>(e.tid), static_cast<int>(e.fd), node);
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
      if (denials_.first(who.host_tgid, node->name, "write " + r.call.name))
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
