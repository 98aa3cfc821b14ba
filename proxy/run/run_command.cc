// `gdrproxy run` on top of the engine: one Session for one command this process launches. What
// only `run` has lives here: the sandbox's launch (Landlock, filters, pid namespace), the
// start-up note on what this kernel guarantees, forwarding of signals to the command, and the
// reaping that decides when it is over: the command has exited and every listener has hung up.
#include "proxy/run/run_command.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <stdexcept>

#include "base/error.h"
#include "base/escape.h"
#include "base/unique_fd.h"
#include "proxy/engine/engine.h"
#include "proxy/engine/session.h"
#include "proxy/engine/session_setup.h"
#include "proxy/observe/bpf_links.h"
#include "proxy/run/launcher.h"
#include "proxy/sandbox/landlock_guard.h"

namespace gdrproxy::proxy {
namespace {

namespace asio = boost::asio;

// The launch of the sandbox as this kernel and these options allow; notes what it lacks.
LaunchSpec sandbox_spec(const RunOptions& o, const SessionConfig& config,
                        const DeviceCatalog& catalog, const KernelAllowed& kernel_allowed) {
  auto note = [&](const std::string& msg) {
    if (!o.quiet) std::fprintf(stderr, "gdrproxy: %s\n", printable(msg).c_str());
  };
  LaunchSpec spec;
  spec.argv = o.argv;
  if (config.policy.polices_uverbs_write_commands())
    note("policy " + config.policy.origin() +
         ": its uverbs command rules also name the commands' write() encoding, which is never "
         "trapped (that would trap every write): such write()s are reported with --trace or "
         "--trace-json, not denied");
  spec.landlock = landlock_level(o.landlock_abi_max);
  switch (o.open_trap) {
    case OpenTrapChoice::kWrite:
      if (spec.landlock.abi < 1)
        throw Error("--trap-opens=write needs Landlock, which this kernel lacks");
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
  spec.filter.refuse_io_uring = !every_gpu_granted(catalog, config.grants);
  spec.filter.trap_pidfd_getfd = config.broker_pidfd_getfd;
  spec.filter.kernel_allowed_ioctls = kernel_allowed.requests;
  spec.pid_namespace = can_bind_lifetime();
  spec.quiet = o.quiet;
  spec.keep_caps = o.keep_caps;
  // One line on what this kernel and these privileges do not guarantee (always said), or on
  // what they do (said when tracing).
  std::string s = landlock_shortfall(spec.landlock);
  if (!spec.pid_namespace)
    s += std::string(s.empty() ? "" : "; ") +
         "no pid namespace (needs CAP_SYS_ADMIN): a process that leaves the sandbox's tree "
         "outlives a killed gdrproxy";
  const bool tracing = o.trace_text || o.trace_json;
  if (!s.empty())
    note("sandbox: " + s);
  else if (tracing)
    note("sandbox: Landlock ABI " + std::to_string(spec.landlock.abi) +
         " (ungranted devices unusable, no device nodes made, no signal out), own pid "
         "namespace" +
         (spec.keep_caps ? "" : ", capabilities dropped"));
  return spec;
}

}  // namespace

int run_supervised(const RunOptions& o) {
  Policy policy = o.policy_file ? Policy::load_file(*o.policy_file) : Policy::builtin_default();
  Engine engine(DeviceCatalog::scan(o.dev_root), o.nvidia_abi_as);
  engine.start_trap_copies(o.trap_copy);
  SessionConfig config = planned_session(
      std::move(policy), engine.catalog(),
      o.grants.empty() ? std::nullopt : std::optional<std::vector<std::string>>(o.grants), o.mode);
  config.trace_text = o.trace_text;
  config.trace_json = o.trace_json;
  config.quiet = o.quiet;
  config.sync_wakeup = o.sync_wakeup;
  config.allow_unknown_nvidia_driver = o.allow_unknown_nvidia_driver;
  config.broker_pidfd_getfd = o.broker_pidfd_getfd;
  config.kernel_allow = o.kernel_allow;
  config.lsm = o.lsm;
  Session session(engine, std::move(config));
  const LaunchSpec spec =
      sandbox_spec(o, session.config(), engine.catalog(), session.kernel_allowed());
  // The judge lives as long as this process; a sandbox must not outlive it, unjudged, with
  // requests its filter lets run untrapped: only the pid namespace's kill guarantees that.
  if (session.judged_in_kernel() && !spec.pid_namespace)
    throw Error(
        "--lsm: the sandbox needs a pid namespace of its own (CAP_SYS_ADMIN), so that "
        "no task of it outlives the judge");

  // Orphaned descendants are re-parented to us, so we can reap them: the listener hangs up only
  // once every sandboxed task has been reaped.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  Launched l = launch_sandboxed(spec, engine.catalog(), session.config().grants);
  UniqueFd ready(l.ready_fd);
  // A reader that goes away (`--trace | head -1`) must not kill the supervisor: writes then fail
  // with EPIPE and serving goes on. Set after the fork, so the command keeps SIGPIPE's default.
  ::signal(SIGPIPE, SIG_IGN);

  asio::io_context& io = engine.io();
  bool child_done = false;
  int exit_status = 0;
  auto maybe_stop = [&] {
    if (child_done && session.ended()) io.stop();
  };
  session.on_end(maybe_stop);
  {
    struct stat st {};
    if (::stat(("/proc/" + std::to_string(l.pid) + "/ns/pid").c_str(), &st) == 0)
      session.set_pid_namespace(st.st_ino);
  }
  session.add_listener(l.notify_fd);

  // Reaping: the command's status, and every orphan re-parented to us.
  asio::signal_set sigchld(io, SIGCHLD);
  auto reap = [&] {
    for (;;) {
      int st;
      const pid_t p = ::waitpid(-1, &st, WNOHANG);
      if (p <= 0) break;
      if (p == l.pid) {
        child_done = true;
        exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      }
    }
    maybe_stop();
  };
  std::function<void()> arm_sigchld = [&] {
    sigchld.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      reap();
      if (!io.stopped()) arm_sigchld();
    });
  };
  arm_sigchld();
  // Signals to gdrproxy are the command's.
  asio::signal_set forwarded(io);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT})
    forwarded.add(s);
  std::function<void()> arm_forward = [&] {
    forwarded.async_wait([&](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      if (!child_done) ::kill(l.pid, sig);
      arm_forward();
    });
  };
  arm_forward();
  // A missed SIGCHLD (coalesced with another) must not leave us waiting: reap once a second.
  asio::steady_timer sweep(io);
  std::function<void()> arm_sweep = [&] {
    sweep.expires_after(std::chrono::seconds(1));
    sweep.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      reap();
      if (!io.stopped()) arm_sweep();
    });
  };
  arm_sweep();

  // Marked before it runs the command: every task it creates is judged from its first call.
  try {
    session.judge_in_kernel(l.pid);
  } catch (const Error&) {
    ::kill(l.pid, SIGKILL);
    ::waitpid(l.pid, nullptr, 0);
    throw;
  }
  char go = 'G';
  (void)!::write(ready.get(), &go, 1);
  ready.reset();
  io.run();
  // The session's thread writes what it has been delivered, then the last results come here.
  session.stop();
  engine.drain_observer();
  session.finish("result not observed before the sandbox exited");
  session.print_summary(o.stats);
  if (o.stats || ((o.trace_text || o.trace_json) && !o.quiet))
    if (const std::string why = engine.trap_copies_unavailable(); !why.empty())
      std::fprintf(stderr,
                   "gdrproxy: trap copies were unavailable (%s): every trapped ioctl's fd and "
                   "argument were looked up by gdrproxy\n",
                   printable(why).c_str());
  detach_bpf_after_exit();
  return exit_status;
}

}  // namespace gdrproxy::proxy
