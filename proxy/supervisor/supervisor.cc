// The notify loop. One thread, one Boost.Asio io_context, three event sources: the seccomp
// listener (device calls), the BPF ring buffer (results of calls we let continue), and signals
// (SIGCHLD to reap, the rest forwarded to the command). Every notification is answered exactly
// once: CONTINUE, an error, or an injected fd. Each is handled inside an exception boundary:
// whatever a tenant's bytes make a handler throw, that call is failed closed (EPERM), one line
// says why, and the loop keeps serving.
#include "proxy/supervisor/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>

#include "proxy/abi/nvidia_abi.h"
#include "proxy/abi/uverbs_abi.h"
#include "proxy/broker/open_broker.h"
#include "proxy/decode/nvidia_decoder.h"
#include "proxy/decode/rdma_cm_decoder.h"
#include "proxy/decode/uverbs_decoder.h"
#include "proxy/devices/device_catalog.h"
#include "proxy/devices/nvidia_gpus.h"
#include "proxy/gpudirect/dmabuf_check.h"
#include "proxy/mem/process_memory.h"
#include "proxy/observe/exit_observer.h"
#include "proxy/sandbox/landlock_guard.h"
#include "proxy/supervisor/denial_log.h"
#include "proxy/supervisor/launcher.h"
#include "proxy/supervisor/process_info.h"
#include "proxy/supervisor/seccomp_notify.h"
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

class Supervisor {
 public:
  Supervisor(const RunOptions& o, Policy policy, DeviceCatalog catalog, Grants grants)
      : opts_(o),
        policy_(std::move(policy)),
        catalog_(std::move(catalog)),
        grants_(std::move(grants)),
        broker_(catalog_, grants_, policy_.open_errno()),
        mode_(o.mode.value_or(policy_.mode().value_or(Mode::kEnforce))),
        signals_(io_),
        sigchld_(io_, SIGCHLD),
        sweep_(io_) {}

  int run();

 private:
  void note(const std::string& msg) {
    if (!opts_.quiet) std::fprintf(stderr, "gdrproxy: %s\n", printable(msg).c_str());
  }
  // The only ways a notification is answered; each records that the current one was.
  int answer_continue(uint64_t id) {
    answered_ = true;
    return notif_continue(nfd_, id);
  }
  int answer_error(uint64_t id, int err) {
    answered_ = true;
    return notif_error(nfd_, id, err);
  }
  int answer_fd(uint64_t id, int srcfd, bool cloexec) {
    answered_ = true;
    return notif_inject_fd(nfd_, id, srcfd, cloexec);
  }
  bool tracing() const { return opts_.trace_text || json_out_ != nullptr; }
  void setup_nvidia();
  void refuse_ungranted(const seccomp_notif& req, int fd, const DeviceNode& node, DecodedCall call,
                        const std::string& reason, uint64_t t0);
  std::string ungranted_gpu(uint32_t instance);
  void setup_observer();
  void arm_notify();
  void arm_observer();
  void arm_signals();
  void arm_forward();
  void arm_sigchld();
  void arm_sweep();
  void on_notify_ready();
  void handle(const seccomp_notif& req);
  void dispatch(const seccomp_notif& req);
  void handle_ioctl(const seccomp_notif& req, uint64_t t0);
  void handle_open(const seccomp_notif& req, uint64_t t0);
  void continue_observed(TraceRecord& r, uint64_t id, pid_t tid, uint64_t t0, bool watch_rdma_cm);
  void finish_call(TraceRecord& r, const DeviceNode& node, const Verdict& v, uint64_t id, pid_t tid,
                   uint64_t t0);
  // The catalogued device behind a caller's fd, or nullptr.
  const DeviceNode* device_of_fd(pid_t tid, int fd) const;
  void on_exit_event(const gdrproxy_exit_event& e);
  void on_cm_write(const gdrproxy_exit_event& e);
  void emit(TraceRecord& r);
  void reap();
  void maybe_finish();
  void finish_pending(const std::string& note);
  TraceRecord begin_record(const seccomp_notif& req, const char* syscall);
  const ProcessIdentity& identity(pid_t tid);

  const RunOptions& opts_;
  Policy policy_;
  DeviceCatalog catalog_;
  Grants grants_;
  OpenBroker broker_;
  Mode mode_;
  const NvidiaDriverAbi* nv_abi_ = nullptr;
  bool nv_enforce_ = true;
  std::optional<std::string> nv_version_;  // the loaded driver's, if readable
  // Every NVIDIA GPU node here is granted: device objects need no check of the GPU they name.
  bool all_gpus_granted_ = true;
  std::string nv_ctl_path_ = "/dev/nvidiactl";
  unsigned nv_major_ =
      195;  // the frontend's major, from the catalogued nvidiactl when there is one

  asio::io_context io_;
  std::unique_ptr<asio::posix::stream_descriptor> notify_;
  std::unique_ptr<asio::posix::stream_descriptor> ring_;
  asio::signal_set signals_;
  asio::signal_set sigchld_;
  asio::steady_timer sweep_;
  std::unique_ptr<ExitObserver> observer_;
  // Opened close-on-exec ("e"): the sandbox must never inherit the trace and rewrite it.
  std::unique_ptr<FILE, int (*)(FILE*)> json_out_{nullptr, &std::fclose};

  pid_t child_ = -1;
  int nfd_ = -1;
  bool answered_ = false;        // the notification being handled has been answered
  uint64_t handler_faults_ = 0;  // notifications failed closed by the exception boundary
  bool child_done_ = false;
  bool hangup_ = false;
  int exit_status_ = 0;
  uint64_t seq_ = 0;
  // Records waiting for their result, by seq; and which seq each host tid waits on.
  std::map<uint64_t, std::pair<TraceRecord, uint64_t>> pending_;  // seq -> (record, t0)
  std::map<uint32_t, uint64_t> pending_by_tid_;
  // Identities by host tid, valid while /proc/<tid> keeps its inode (a reused pid gets a new one).
  std::map<pid_t, std::pair<ino_t, ProcessIdentity>> identities_;
  DenialLog denials_;
  // Fds whose writes the observer watches, with their class, recorded when their open returned.
  std::map<std::pair<uint32_t, uint32_t>, DeviceClass> watched_fds_;
  uint64_t n_ioctl_ = 0, n_open_ = 0, n_brokered_ = 0;
  uint64_t ns_ioctl_ = 0, ns_open_ = 0;  // time spent handling, for --stats
};

void Supervisor::setup_nvidia() {
  bool have_nvidia = false;
  for (const auto& n : catalog_.nodes())
    if (n.device_class == DeviceClass::kNvidiaFrontend || n.device_class == DeviceClass::kNvidiaUvm)
      have_nvidia = true;
  const auto version = detect_nvidia_driver_version();
  nv_version_ = version;
  for (const auto& n : catalog_.nodes()) {
    if (n.device_class != DeviceClass::kNvidiaFrontend) continue;
    if (n.name == "nvidiactl") {
      nv_ctl_path_ = n.path;
      nv_major_ = major(n.rdev);
    } else if (!grants_.granted(n)) {
      all_gpus_granted_ = false;
    }
  }
  nv_abi_ = version ? nvidia_abi_for_version(*version) : nullptr;
  if (!nv_abi_) {
    nv_abi_ = &nvidia_newest_abi();
    // No NVIDIA driver loaded: whatever answers on /dev/nvidia* nodes is not NVIDIA's, so there
    // is no driver version to disagree with. Calls are named and policed with the newest tables.
    const bool driver_loaded = version || access("/proc/driver/nvidia", F_OK) == 0;
    if (have_nvidia && driver_loaded) {
      if (mode_ == Mode::kEnforce && !opts_.allow_unknown_nvidia_driver)
        throw std::runtime_error(
            "NVIDIA driver " + version.value_or("(version unreadable)") +
            " is not in this build's ABI tables (newest known: " + std::string(nv_abi_->version) +
            "): refusing to enforce a policy on calls it cannot name; pass "
            "--allow-unknown-nvidia-driver to run NVIDIA calls trace-only");
      nv_enforce_ = false;
      note("NVIDIA driver " + version.value_or("(version unknown)") +
           " is not in this build's ABI tables: NVIDIA calls are traced with " +
           std::string(nv_abi_->version) + " names and never denied (trace-only)");
    }
  }
}

void Supervisor::setup_observer() {
  if (!tracing()) return;
  std::string why;
  observer_ = ExitObserver::open([this](const gdrproxy_exit_event& e) { on_exit_event(e); }, why);
  if (!observer_) note("results of allowed calls will not be shown (" + why + ")");
}

int Supervisor::run() {
  if (opts_.trace_json) {
    json_out_.reset(std::fopen(opts_.trace_json->c_str(), "we"));
    if (!json_out_)
      throw std::runtime_error("cannot write trace file " + *opts_.trace_json + ": " +
                               std::strerror(errno));
  }
  setup_nvidia();
  setup_observer();

  LaunchSpec spec;
  spec.argv = opts_.argv;
  if (policy_.polices_uverbs_write_commands())
    note("policy " + policy_.origin() +
         ": its uverbs command rules also name the commands' write() encoding, which is never "
         "trapped (that would trap every write): such write()s are reported with --trace or "
         "--trace-json, not denied");
  spec.landlock = landlock_level();
  const bool have_landlock = spec.landlock.abi >= 1;
  switch (opts_.open_trap) {
    case OpenTrapChoice::kWrite:
      if (!have_landlock)
        throw std::runtime_error("--trap-opens=write needs Landlock, which this kernel lacks");
      spec.filter.open_trap = OpenTrap::kWriteOpens;
      break;
    case OpenTrapChoice::kAll:
      spec.filter.open_trap = OpenTrap::kAllOpens;
      break;
    case OpenTrapChoice::kAuto:
      // Read-only and ioctl-only opens may go untrapped only where the kernel checks device
      // ioctls: a node reached around the broker is then useless.
      spec.filter.open_trap =
          spec.landlock.device_ioctls ? OpenTrap::kWriteOpens : OpenTrap::kAllOpens;
      break;
  }
  spec.filter.refuse_unbrokered_opens = !spec.landlock.device_ioctls;
  // The NVIDIA driver lets a process allocate any GPU it holds an fd of, even an fd Landlock
  // makes useless for ioctls; io_uring opens are the one way to such an fd around the broker.
  spec.filter.refuse_io_uring = !all_gpus_granted_;
  spec.pid_namespace = can_bind_lifetime();
  spec.quiet = opts_.quiet;
  spec.keep_caps = opts_.keep_caps;
  {
    // One line on what this kernel and these privileges do not guarantee (always said), or on
    // what they do (said when tracing).
    std::string s = landlock_shortfall(spec.landlock);
    if (!spec.pid_namespace)
      s += std::string(s.empty() ? "" : "; ") +
           "no pid namespace (needs CAP_SYS_ADMIN): a process that leaves the sandbox's tree "
           "outlives a killed gdrproxy";
    if (!s.empty())
      note("sandbox: " + s);
    else if (tracing())
      note("sandbox: Landlock ABI " + std::to_string(spec.landlock.abi) +
           " (ungranted devices unusable, no device nodes made, no signal out), own pid "
           "namespace" +
           (spec.keep_caps ? "" : ", capabilities dropped"));
  }

  // Orphaned descendants are re-parented to us, so we can reap them: the listener hangs up only
  // once every sandboxed task has been reaped.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  Launched l = launch_sandboxed(spec, catalog_, grants_);
  child_ = l.pid;
  nfd_ = l.notify_fd;
  // A reader that goes away (`--trace | head -1`) must not kill the supervisor: writes then fail
  // with EPIPE and serving goes on. Set after the fork, so the command keeps SIGPIPE's default.
  ::signal(SIGPIPE, SIG_IGN);
  // Synchronous wake-ups cut a round trip from ~50 us to ~6 us on 2-vCPU VMs (kernel >= 6.6),
  // but on many-core hosts they move every caller onto the supervisor's CPU (docs/PERFORMANCE.md).
  const bool sync =
      opts_.sync_wakeup.value_or(::sysconf(_SC_NPROCESSORS_ONLN) <= kSyncWakeupMaxCpus);
  if (sync &&
      ::ioctl(nfd_, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 0) != 0 &&
      tracing())
    note("synchronous wake-up not supported by this kernel (slower round trips)");
  notify_ = std::make_unique<asio::posix::stream_descriptor>(io_, nfd_);
  arm_notify();
  arm_observer();
  arm_signals();
  arm_sweep();
  char go = 'G';
  (void)!::write(l.ready_fd, &go, 1);
  ::close(l.ready_fd);
  io_.run();
  if (observer_) observer_->consume();
  finish_pending("result not observed before the sandbox exited");
  if (observer_ && observer_->lost())
    std::fprintf(stderr,
                 "gdrproxy: %llu results of allowed calls were lost (the observer's ring buffer "
                 "was full); their trace records say \"result not observed\"\n",
                 static_cast<unsigned long long>(observer_->lost()));
  if (handler_faults_)
    std::fprintf(stderr, "gdrproxy: %llu calls failed closed on internal errors (see above)\n",
                 static_cast<unsigned long long>(handler_faults_));
  if (opts_.stats || (tracing() && !opts_.quiet))
    std::fprintf(
        stderr,
        "gdrproxy: served %llu notifications: %llu ioctl, %llu open "
        "(%llu brokered), %llu denied (%llu repeated denial lines not printed); handler %.1f "
        "us/ioctl, %.1f us/open\n",
        static_cast<unsigned long long>(n_ioctl_ + n_open_),
        static_cast<unsigned long long>(n_ioctl_), static_cast<unsigned long long>(n_open_),
        static_cast<unsigned long long>(n_brokered_),
        static_cast<unsigned long long>(denials_.total()),
        static_cast<unsigned long long>(denials_.repeats()),
        n_ioctl_ ? double(ns_ioctl_) / 1e3 / double(n_ioctl_) : 0.0,
        n_open_ ? double(ns_open_) / 1e3 / double(n_open_) : 0.0);
  else if (denials_.total() && !opts_.quiet)
    note(std::to_string(denials_.total()) + " device call(s) denied" +
         (denials_.repeats() ? " (" + std::to_string(denials_.repeats()) +
                                   " repeated denial lines not printed; --stats counts them)"
                             : ""));
  return exit_status_;
}

void Supervisor::arm_notify() {
  notify_->async_wait(asio::posix::stream_descriptor::wait_read,
                      [this](const boost::system::error_code& ec) {
                        if (ec) return;
                        on_notify_ready();
                      });
}

void Supervisor::arm_observer() {
  if (!observer_) return;
  if (!ring_)
    ring_ = std::make_unique<asio::posix::stream_descriptor>(io_, ::dup(observer_->poll_fd()));
  ring_->async_wait(asio::posix::stream_descriptor::wait_read,
                    [this](const boost::system::error_code& ec) {
                      if (ec) return;
                      observer_->consume();
                      arm_observer();
                    });
}

void Supervisor::arm_signals() {
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT})
    signals_.add(s);
  arm_forward();
  arm_sigchld();
}

void Supervisor::arm_forward() {
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    if (child_ > 0 && !child_done_) ::kill(child_, sig);
    arm_forward();
  });
}

void Supervisor::arm_sigchld() {
  sigchld_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    reap();
    if (!io_.stopped()) arm_sigchld();
  });
}

void Supervisor::arm_sweep() {
  sweep_.expires_after(std::chrono::seconds(1));
  sweep_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    reap();
    // A thread that died inside a call never produces an exit event.
    for (auto it = pending_by_tid_.begin(); it != pending_by_tid_.end();) {
      struct stat st;
      if (::stat(("/proc/" + std::to_string(it->first)).c_str(), &st) == 0) {
        ++it;
        continue;
      }
      auto p = pending_.find(it->second);
      if (p != pending_.end()) {
        p->second.first.note = "thread exited before the call returned";
        emit(p->second.first);
        pending_.erase(p);
      }
      if (observer_) observer_->forget(it->first);
      it = pending_by_tid_.erase(it);
    }
    if (json_out_) std::fflush(json_out_.get());
    maybe_finish();
    if (!io_.stopped()) arm_sweep();
  });
}

void Supervisor::reap() {
  for (;;) {
    int st;
    pid_t p = ::waitpid(-1, &st, WNOHANG);
    if (p <= 0) break;
    if (p == child_) {
      child_done_ = true;
      exit_status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
  }
  maybe_finish();
}

void Supervisor::maybe_finish() {
  if (!hangup_) {
    pollfd p{nfd_, POLLIN, 0};
    if (::poll(&p, 1, 0) == 1 && (p.revents & POLLHUP) && !(p.revents & POLLIN)) hangup_ = true;
  }
  if (child_done_ && hangup_) io_.stop();
}

void Supervisor::on_notify_ready() {
  // The listener reports POLLHUP once no task uses the filter; RECV would then block forever.
  for (;;) {
    pollfd p{nfd_, POLLIN, 0};
    if (::poll(&p, 1, 0) != 1) break;
    if (!(p.revents & POLLIN)) {
      if (p.revents & POLLHUP) hangup_ = true;
      break;
    }
    seccomp_notif req{};
    if (::ioctl(nfd_, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
      if (errno == EINTR || errno == ENOENT) continue;  // ENOENT: the caller died meanwhile
      note(std::string("SECCOMP_IOCTL_NOTIF_RECV: ") + std::strerror(errno));
      break;
    }
    handle(req);
  }
  if (hangup_) maybe_finish();
  if (!io_.stopped() && !hangup_) arm_notify();
}

const ProcessIdentity& Supervisor::identity(pid_t tid) {
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

TraceRecord Supervisor::begin_record(const seccomp_notif& req, const char* syscall) {
  TraceRecord r;
  r.seq = ++seq_;
  r.wall_time = wall_seconds();
  r.who = identity(static_cast<pid_t>(req.pid));
  r.syscall = syscall;
  return r;
}

void Supervisor::handle(const seccomp_notif& req) {
  answered_ = false;
  try {
    dispatch(req);
  } catch (const std::exception& e) {
    ++handler_faults_;
    std::fprintf(stderr, "gdrproxy: internal error handling %s of pid %llu, failed closed: %s\n",
                 req.data.nr == SYS_ioctl ? "an ioctl" : "an open",
                 static_cast<unsigned long long>(req.pid), printable(e.what()).c_str());
  } catch (...) {
    ++handler_faults_;
    std::fprintf(stderr, "gdrproxy: internal error handling a call of pid %llu, failed closed\n",
                 static_cast<unsigned long long>(req.pid));
  }
  // Never leave a caller blocked: whatever path was taken, the notification gets an answer.
  if (!answered_) answer_error(req.id, EPERM);
}

void Supervisor::dispatch(const seccomp_notif& req) {
  const uint64_t t0 = monotonic_ns();
  switch (req.data.nr) {
    case SYS_ioctl:
      ++n_ioctl_;
      handle_ioctl(req, t0);
      ns_ioctl_ += monotonic_ns() - t0;
      return;
    case SYS_open:
    case SYS_openat:
    case SYS_openat2:
    case SYS_creat:
      ++n_open_;
      handle_open(req, t0);
      ns_open_ += monotonic_ns() - t0;
      return;
    default:
      answer_continue(req.id);
  }
}

void Supervisor::handle_ioctl(const seccomp_notif& req, uint64_t t0) {
  const int fd = static_cast<int>(req.data.args[0]);
  const uint32_t cmd = static_cast<uint32_t>(req.data.args[1]);
  const uint64_t arg = req.data.args[2];
  // The device behind the fd decides the class and is checked against the grants, the same way
  // with or without a trace: the request number alone says nothing about which driver gets it
  // (NVIDIA ignores the type byte; any fd can carry any number).
  const DeviceNode* node = device_of_fd(static_cast<pid_t>(req.pid), fd);
  if (!node) {
    // Not one of our devices (the filter matches by number only): let it be.
    answer_continue(req.id);
    return;
  }
  if (!grants_.granted(*node)) {
    // An fd of an ungranted device (inherited, passed over a socket, or opened around the
    // broker) is refused whatever the mode: grants are never advisory.
    DecodedCall call;
    call.device_class = node->device_class;
    call.cmd = cmd;
    char name[32];
    std::snprintf(name, sizeof name, "IOCTL_0x%08x", cmd);
    call.name = name;
    refuse_ungranted(req, fd, *node, std::move(call), "device " + node->name + " is not granted",
                     t0);
    return;
  }
  ProcessMemory mem(static_cast<pid_t>(req.pid));
  DecodedCall call;
  // Without a trace only what the policy matches on is decoded.
  const DecodeDepth depth = tracing() ? DecodeDepth::kFull : DecodeDepth::kPolicy;
  switch (node->device_class) {
    case DeviceClass::kUverbs:
      call =
          decode_uverbs_ioctl(cmd, arg, mem, tracing() ? DecodeDepth::kFull : DecodeDepth::kPolicy);
      break;
    case DeviceClass::kNvidiaFrontend:
      call = decode_nvidia_frontend_ioctl(cmd, arg, mem, *nv_abi_, depth);
      break;
    case DeviceClass::kNvidiaUvm:
      call = decode_nvidia_uvm_ioctl(cmd, arg, mem, *nv_abi_, depth);
      break;
    default:
      call.device_class = node->device_class;
      call.cmd = cmd;
      char name[32];
      std::snprintf(name, sizeof name, "IOCTL_0x%08x", cmd);
      call.name = name;
  }
  // Everything read above is only trustworthy if the caller is still the one that trapped.
  if (!notif_id_valid(nfd_, req.id)) return;
  if (call.keys.nv_device_instance && !all_gpus_granted_) {
    // A device object names its GPU by instance, through whichever frontend fd: the grant is
    // checked on the GPU the driver says that instance is.
    std::string why = ungranted_gpu(*call.keys.nv_device_instance);
    if (!why.empty()) {
      refuse_ungranted(req, fd, *node, std::move(call), why, t0);
      return;
    }
  }
  Verdict v = policy_.evaluate(call);
  if (v.action == Action::kAllow && call.keys.dmabuf_fd) {
    // GPUDirect: the registered dma-buf must come from a granted GPU.
    const ClassPolicy* cp = policy_.class_policy(DeviceClass::kUverbs);
    if (cp && !cp->dmabuf_exporters.empty()) {
      DmabufVerdict d =
          check_dmabuf_fd(static_cast<pid_t>(req.pid), *call.keys.dmabuf_fd, cp->dmabuf_exporters);
      if (!d.allowed) {
        v.action = Action::kDeny;
        v.err = cp->err;
        v.log = true;
        v.reason = "uverbs dma-buf provenance: " + d.reason;
      } else if (tracing()) {
        call.args.push_back({"dmabuf", d.reason});
      }
    }
  }
  TraceRecord r;
  if (tracing() || (v.action == Action::kDeny && v.log)) {
    r = begin_record(req, "ioctl");
    r.fd = fd;
    r.device = node->name;
    r.call = std::move(call);
    r.reason = v.reason;
  }
  finish_call(r, *node, v, req.id, static_cast<pid_t>(req.pid), t0);
}

// Refuses a call on a device (or naming a GPU) the sandbox was not granted, whatever the mode:
// grants are never advisory.
void Supervisor::refuse_ungranted(const seccomp_notif& req, int fd, const DeviceNode& node,
                                  DecodedCall call, const std::string& reason, uint64_t t0) {
  TraceRecord r = begin_record(req, "ioctl");
  r.fd = fd;
  r.device = node.name;
  r.call = std::move(call);
  r.reason = reason;
  answer_error(req.id, policy_.open_errno());
  r.decision = "deny";
  r.ret = -1;
  r.err = policy_.open_errno();
  r.latency_us = double(monotonic_ns() - t0) / 1e3;
  if (denials_.first(r.who.host_tgid, node.name, r.reason))
    std::fprintf(stderr, "gdrproxy: denied %s on %s by pid %u (ns pid %u): %s -> %s\n",
                 printable(r.call.name).c_str(), node.path.c_str(), r.who.host_tid, r.who.ns_tid,
                 printable(r.reason).c_str(), errno_name(r.err));
  if (tracing()) emit(r);
}

// Why NVIDIA device instance `instance` may not be used here (empty: it is a granted GPU). The
// driver is asked at each call, since instances are given out as GPUs attach; anything it cannot
// answer is a refusal (the driver itself maps an unpopulated instance to its first GPU).
std::string Supervisor::ungranted_gpu(uint32_t instance) {
  const std::string what = "NV01_DEVICE_0 device instance " + std::to_string(instance);
  if (!nv_version_)
    return what + ": the NVIDIA driver version is unknown, so its GPU cannot be told";
  std::string why;
  const auto gpus = query_nvidia_gpus(nv_ctl_path_, *nv_version_, why);
  if (!gpus) return what + ": cannot ask the driver which GPU it is (" + why + ")";
  const NvidiaGpu* g = gpu_of_device_instance(*gpus, instance);
  if (!g) return what + " is no attached GPU";
  const DeviceNode* n = catalog_.find(makedev(nv_major_, g->minor));
  if (!n || !grants_.granted(*n))
    return what + " is GPU " + (n ? n->name : "minor " + std::to_string(g->minor)) +
           ", which is not granted";
  return {};
}

// Answers an allowed or denied device call and completes its trace record (now, or when the BPF
// observer reports the result).
void Supervisor::finish_call(TraceRecord& r, const DeviceNode& node, const Verdict& v, uint64_t id,
                             pid_t tid, uint64_t t0) {
  const bool nv = node.device_class == DeviceClass::kNvidiaFrontend ||
                  node.device_class == DeviceClass::kNvidiaUvm;
  const bool deny = v.action == Action::kDeny && mode_ == Mode::kEnforce && (!nv || nv_enforce_);
  if (deny) {
    answer_error(id, v.err);
    r.decision = "deny";
    r.ret = -1;
    r.err = v.err;
    r.latency_us = double(monotonic_ns() - t0) / 1e3;
    if (denials_.first(r.who.host_tgid, node.name, v.reason) && v.log)
      std::fprintf(stderr, "gdrproxy: denied %s %s by pid %u (ns pid %u): %s -> %s\n",
                   node.name.c_str(), printable(r.call.name).c_str(), r.who.host_tid, r.who.ns_tid,
                   printable(v.reason).c_str(), errno_name(v.err));
    if (tracing()) emit(r);
    return;
  }
  r.decision = v.action == Action::kDeny ? "allow (would deny: trace mode)" : "allow";
  if (v.action == Action::kDeny && v.log)
    std::fprintf(stderr, "gdrproxy: %s, would deny %s %s: %s\n",
                 mode_ == Mode::kTrace ? "trace mode" : "driver not in the ABI tables",
                 node.name.c_str(), printable(r.call.name).c_str(), printable(v.reason).c_str());
  if (!tracing()) {
    answer_continue(id);
    return;
  }
  continue_observed(r, id, tid, t0, false);
}

// Lets a traced call run and registers its thread so the BPF observer completes the record at
// the syscall's exit; without an observer the record is written now, result unknown.
void Supervisor::continue_observed(TraceRecord& r, uint64_t id, pid_t tid, uint64_t t0,
                                   bool watch_rdma_cm) {
  if (observer_ && observer_->expect(tid, r.seq, r.call.result_regions[0], r.call.result_regions[1],
                                     watch_rdma_cm)) {
    if (answer_continue(id) != 0) {
      observer_->forget(tid);
      r.note = "caller gone before the call ran";
      emit(r);
      return;
    }
    pending_by_tid_[tid] = r.seq;
    pending_.emplace(r.seq, std::make_pair(std::move(r), t0));
    return;
  }
  answer_continue(id);
  r.note = "result not observed";
  emit(r);
}

void Supervisor::handle_open(const seccomp_notif& req, uint64_t t0) {
  ProcessMemory mem(static_cast<pid_t>(req.pid));
  OpenCall call;
  if (!OpenBroker::read_call(static_cast<pid_t>(req.pid), req.data.nr,
                             reinterpret_cast<const uint64_t*>(req.data.args), call, mem)) {
    answer_continue(req.id);
    return;
  }
  OpenDecision d = broker_.decide(call, mem);
  // The brokered host fd is closed on every way out of here, a throw included.
  struct CloseOnExit {
    int& fd;
    ~CloseOnExit() {
      if (fd >= 0) ::close(fd);
    }
  } closer{d.host_fd};
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
      d.host_fd < 0) {
    answer_error(req.id, d.err);
    r.decision = "deny";
    r.ret = -1;
    r.err = d.err;
    if (d.kind == OpenDecision::Kind::kDeny) {
      if (denials_.first(r.who.host_tgid, d.node->path, d.reason))
        std::fprintf(stderr, "gdrproxy: denied open of %s (%s) by pid %u (ns pid %u): %s -> %s\n",
                     quote_text(d.path).c_str(), d.node->path.c_str(), r.who.host_tid, r.who.ns_tid,
                     printable(d.reason).c_str(), errno_name(d.err));
    } else if (d.kind == OpenDecision::Kind::kUndecidable) {
      if (denials_.first(r.who.host_tgid, d.path, d.reason))
        std::fprintf(stderr, "gdrproxy: denied open of %s by pid %u (ns pid %u): %s -> %s\n",
                     quote_text(d.path).c_str(), r.who.host_tid, r.who.ns_tid,
                     printable(d.reason).c_str(), errno_name(d.err));
    }
  } else {
    const int fd = answer_fd(req.id, d.host_fd, (call.flags & O_CLOEXEC) != 0);
    ::close(d.host_fd);
    d.host_fd = -1;
    r.decision = "broker";
    ++n_brokered_;
    if (fd >= 0) {
      r.ret = fd;
    } else {
      r.ret = -1;
      r.err = -fd;
      r.note = "fd injection failed";
    }
  }
  r.latency_us = double(monotonic_ns() - t0) / 1e3;
  if (tracing()) emit(r);
}

const DeviceNode* Supervisor::device_of_fd(pid_t tid, int fd) const {
  // AT_STATX_DONT_SYNC: a file on the tenant's FUSE mount answers from its cache instead of
  // asking the (possibly hung) server; device nodes never need it.
  struct statx stx {};
  const std::string link = "/proc/" + std::to_string(tid) + "/fd/" + std::to_string(fd);
  if (::statx(AT_FDCWD, link.c_str(), AT_STATX_DONT_SYNC, STATX_TYPE, &stx) != 0 ||
      !S_ISCHR(stx.stx_mode))
    return nullptr;
  return catalog_.find(makedev(stx.stx_rdev_major, stx.stx_rdev_minor));
}

// A command the caller wrote to its own rdma_cm or uverbs fd, seen by the BPF observer. Observed
// only: the write was never trapped (README, Security model). A uverbs command is judged by the
// policy like its ioctl encodings; a would-be denial is reported, not enforced.
void Supervisor::on_cm_write(const gdrproxy_exit_event& e) {
  const ProcessIdentity& who = identity(static_cast<pid_t>(e.tid));
  // The fd was marked at the caller's open. If it now names another file, it was closed and its
  // number reused: stop watching it. If it is gone (closed, or the caller is exiting) the write
  // still happened on the marked fd, whose class was recorded when its open returned.
  struct stat st;
  const std::string link = "/proc/" + std::to_string(e.tid) + "/fd/" + std::to_string(e.fd);
  const bool open_now = ::stat(link.c_str(), &st) == 0;
  const DeviceNode* node = open_now && S_ISCHR(st.st_mode) ? catalog_.find(st.st_rdev) : nullptr;
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
  r.seq = ++seq_;
  r.wall_time = wall_seconds();
  r.who = who;
  r.syscall = "write";
  r.fd = static_cast<int>(e.fd);
  r.device = node->name;
  r.decision = "observed";
  if (node->device_class == DeviceClass::kUverbs) {
    r.call = decode_uverbs_write(kAt, e.len0, mem);
    const Verdict v = policy_.evaluate(r.call);
    if (v.action == Action::kDeny) {
      r.decision = "observed (policy would deny: write() commands are not trapped)";
      r.reason = v.reason;
      if (denials_.first(who.host_tgid, node->name, "write " + r.call.name))
        std::fprintf(stderr,
                     "gdrproxy: not enforceable: pid %u (ns pid %u) sent %s to %s as write(), "
                     "which the policy denies (%s); write() commands are observed, not trapped\n",
                     who.host_tid, who.ns_tid, printable(r.call.name).c_str(), node->name.c_str(),
                     printable(v.reason).c_str());
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
  emit(r);
}

void Supervisor::on_exit_event(const gdrproxy_exit_event& e) {
  if (e.kind == GDRPROXY_EVENT_CM_WRITE) {
    on_cm_write(e);
    return;
  }
  auto it = pending_.find(e.seq);
  if (it == pending_.end()) return;
  TraceRecord& r = it->second.first;
  const uint64_t t0 = it->second.second;
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
    if (watched_fds_.size() > 65536) watched_fds_.clear();
    watched_fds_[{r.who.host_tgid, static_cast<uint32_t>(e.ret)}] = r.call.device_class;
  }
  emit(r);
  auto t = pending_by_tid_.find(e.tid);
  if (t != pending_by_tid_.end() && t->second == e.seq) pending_by_tid_.erase(t);
  pending_.erase(it);
}

void Supervisor::finish_pending(const std::string& why) {
  for (auto& [seq, p] : pending_) {
    p.first.note = why;
    emit(p.first);
  }
  pending_.clear();
  pending_by_tid_.clear();
}

void Supervisor::emit(TraceRecord& r) {
  if (opts_.trace_text) std::fprintf(stderr, "%s\n", format_text(r).c_str());
  // Buffered; flushed by the one-second sweep and at exit, not per record.
  if (json_out_) {
    const std::string line = format_json(r);
    std::fwrite(line.data(), 1, line.size(), json_out_.get());
    std::fputc('\n', json_out_.get());
  }
}

}  // namespace

int run_supervised(const RunOptions& o) {
  Policy policy = o.policy_file ? Policy::load_file(*o.policy_file) : Policy::builtin_default();
  DeviceCatalog catalog = DeviceCatalog::scan(o.dev_root);
  Grants grants = Grants::from_specs(
      catalog,
      o.grants.empty() ? policy.grants() : std::optional<std::vector<std::string>>(o.grants));
  Supervisor s(o, std::move(policy), std::move(catalog), std::move(grants));
  return s.run();
}

}  // namespace gdrproxy::proxy
