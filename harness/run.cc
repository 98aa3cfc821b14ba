// `run`: CMD in a fresh container of this node holding the plan's rails. The idea not to miss:
// the rails are held through the one lifecycle (lifecycle.h), as an attached step holds them,
// with this process as the holder: SIGINT, SIGTERM and SIGHUP are blocked from the start and
// taken with sigtimedwait, so one that comes while the rails are set up gives them back before
// this process dies of it, and one that comes while CMD runs is forwarded to CMD, whose status
// (128+N when a signal killed it) is the run's.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "base/lists.h"
#include "base/program_path.h"
#include "base/unique_fd.h"
#include "harness/command_env.h"
#include "harness/container_start.h"
#include "harness/output.h"
#include "harness/spawn.h"
#include "harness/verbs.h"
#include "sysfs/mount_plan.h"

namespace gdrproxy::harness {
namespace {

namespace fs = std::filesystem;

// Under an MPI launcher (a PMIx server URI in the environment) the launcher's daemon, our parent
// (Open MPI's orted, slurmstepd), serves CMD on 127.0.0.1, which the rail namespace does not
// share: gdr-loopback-relay carries its loopback listeners into that namespace (once per node;
// other ranks find the ports held) until the daemon exits.
void relay_launcher_loopback(const Context& c) {
  const Environment& env = c.env;
  if (!env_set(env, "PMIX_SERVER_URI41") && !env_set(env, "PMIX_SERVER_URI4") &&
      !env_set(env, "PMIX_SERVER_URI3") && !env_set(env, "PMIX_SERVER_URI2"))
    return;
  std::string relay = env_or(env, "GDR_LOOPBACK_RELAY", "");
  if (relay.empty()) {
    relay = (fs::path(c.gdrproxy).parent_path() / "harness/slurm/gdr-loopback-relay").string();
    if (::access(relay.c_str(), X_OK) != 0) relay = program_path("gdr-loopback-relay");
  }
  if (relay.empty() || ::access(relay.c_str(), X_OK) != 0)
    throw Failure(
        "CMD's launcher serves it on 127.0.0.1 (PMIx), but gdr-loopback-relay is not "
        "found (set GDR_LOOPBACK_RELAY)",
        125);
  const std::string parent = std::to_string(::getppid());
  std::string out;
  if (run_capturing({{relay, parent, c.id.paths.ctr_netns}, ChildOutput::kInherit}, out) != 0)
    throw Failure(
        "cannot relay the launcher's loopback ports (pid " + parent + ") into the container", 125);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  if (!out.empty() && out != "0")
    say("the launcher's " + out + " loopback port(s) (pid " + parent +
        ", PMIx) relayed into the container");
}

const char* signal_name(int sig) {
  return sig == SIGINT ? "INT" : sig == SIGTERM ? "TERM" : sig == SIGHUP ? "HUP" : "?";
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// One line on stderr and exit 127, in the child before it becomes CMD.
[[noreturn]] void child_fails(const std::string& what) {
  const std::string line = std::string(kProg) + ": error: " + what +
                           (errno ? std::string(": ") + std::strerror(errno) : "") + "\n";
  if (::write(2, line.data(), line.size()) < 0) ::_exit(127);
  ::_exit(127);
}

// The child that becomes CMD in the harness's own namespaces: the rail namespace, a private
// mount namespace with a /sys of its own (the plan's synthetic sysfs where there is one, else a
// sysfs of the rail namespace), the clean environment, stdin from /dev/null. Never returns.
[[noreturn]] void exec_in_rail_namespace(const Context& c, const std::string& sysfs_plan,
                                         std::vector<std::string> argv,
                                         std::vector<std::string> envs) {
  const int ns = ::open(c.id.paths.ctr_netns.c_str(), O_RDONLY | O_CLOEXEC);
  if (ns < 0 || ::setns(ns, CLONE_NEWNET) != 0) child_fails("cannot enter " + c.id.paths.ctr_netns);
  if (::unshare(CLONE_NEWNS) != 0) child_fails("cannot make a mount namespace");
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    child_fails("cannot make the mounts private");
  // The plan's synthetic sysfs, its live port directories bound from the node's /sys (as the
  // Slurm plugin's tasks get it), else a sysfs of the rail namespace.
  if (sysfs_plan.empty() && ::mount("sysfs", "/sys", "sysfs", 0, nullptr) != 0)
    child_fails("cannot mount a sysfs on /sys");
  if (!sysfs_plan.empty()) {
    try {
      std::ifstream in(sysfs_plan);
      const auto plan = sysfs::mount_plan_from_json(nlohmann::json::parse(in));
      if (const std::string e = sysfs::apply_mount_plan(plan, "/sys", ""); !e.empty())
        throw std::runtime_error(e);
    } catch (const std::exception& e) {
      errno = 0;
      child_fails(std::string("gdrproxy sysfs mount --plan ") + sysfs_plan + ": " + e.what());
    }
  }
  auto a = c_strings(argv);
  auto e = c_strings(envs);
  ::execvpe(a[0], a.data(), e.data());
  child_fails("cannot run " + argv[0]);
}

}  // namespace

int run(const Context& c, const std::vector<std::string>& cmd) {
  need_root("run");
  const StatePaths& p = c.id.paths;
  std::string key = "node";
  const std::string mode = env_or(c.env, "GDR_HARNESS_CONTAINER", "node");
  if (mode == "rank") {
    if (c.id.rank.empty() || c.id.rank.find_first_not_of("0123456789") != std::string::npos)
      throw Failure(
          "GDR_HARNESS_CONTAINER=rank needs the launcher's rank (SLURM_PROCID, "
          "OMPI_COMM_WORLD_RANK or PMIX_RANK); got '" +
              c.id.rank + "'",
          125);
    key = "rank-" + c.id.rank;
  } else if (mode != "node") {
    throw UsageError("GDR_HARNESS_CONTAINER='" + mode +
                         "': node (one container per node, the default) or rank (one per rank)",
                     "run");
  }
  const Plan plan = load_plan(p.plan);
  const RailsMode rails_mode = key == "node" ? RailsMode::kNode : RailsMode::kShared;

  std::string runtime = container_runtime(c.env);
  if (env_or(c.env, "GDR_HARNESS_RUNTIME", "") == "auto")
    say("GDR_HARNESS_RUNTIME=auto: " + runtime);
  if (!runtime.empty()) check_container_runtime(c.env, runtime);

  // From here a signal waits for sigtimedwait: during the setup it is taken after the rails are
  // given back, during CMD it is forwarded.
  sigset_t sigs;
  sigemptyset(&sigs);
  for (const int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&sigs, s);
  sigset_t old;
  ::sigprocmask(SIG_BLOCK, &sigs, &old);

  RunLock lock(c.id);
  lock.acquire();
  const bool joined = rails_enter(c, rails_mode, key, false);
  std::vector<std::string> argv;
  try {
    rails_setup(c, plan, rails_mode, key, ::getpid(), joined);
    const auto envs = command_environment(c.env, c.id.node, plan);
    if (env_true(c.env, "DEBUG_ALL")) {
      const std::string copy =
          env_or(c.env, "GDR_HARNESS_LOG_DIR", "/tmp") + "/gdrproxy-doctor." + c.id.node + ".json";
      std::error_code ec;
      if (fs::is_regular_file(p.state + "/doctor.json", ec) &&
          fs::copy_file(p.state + "/doctor.json", copy, fs::copy_options::overwrite_existing, ec))
        say("DEBUG_ALL=1: the node's doctor report (from prepare) is " + copy);
    }
    relay_launcher_loopback(c);
    // Device grants under gdrproxy run where there are RDMA devices, named after the move (a
    // soft-RoCE rail's device is made again by it and may get another uverbs node).
    const auto nodes = uverbs_grants(plan);
    const std::string grants = nodes.empty() ? "" : join_list(nodes) + ",rdma_cm";
    if (!runtime.empty()) {
      say("CMD runs in a " + runtime +
          " container served by gdrproxy agent, started through the runtime shim (gdrproxy "
          "runtime)");
      argv =
          prepare_container(c, {runtime, key, grants, !plan.sysfs_mount_plan.empty(), envs, cmd});
    } else {
      if (!nodes.empty()) {
        argv = {c.gdrproxy, "run", "--grant", grants, "--"};
        say("CMD runs under gdrproxy run --grant " + grants);
      } else {
        say("CMD runs directly, not under gdrproxy run: no rail has an RDMA device, so no device "
            "node is granted");
      }
      argv.insert(argv.end(), cmd.begin(), cmd.end());
    }
    lock.release();
    // A signal that came during the setup: the rails go back, then it ends this process.
    sigset_t pending;
    ::sigpending(&pending);
    for (const int s : {SIGINT, SIGTERM, SIGHUP})
      if (sigismember(&pending, s)) {
        rails_leave(c, key, lock);
        ::signal(s, SIG_DFL);
        ::sigprocmask(SIG_SETMASK, &old, nullptr);
        ::raise(s);
      }
    say("running in the container: " + join_list(cmd, " "));
    const pid_t child = ::fork();
    if (child < 0) throw Failure("cannot start CMD", 125);
    if (child == 0) {
      ::sigprocmask(SIG_SETMASK, &old, nullptr);
      const int null = ::open("/dev/null", O_RDONLY);
      if (null >= 0) ::dup2(null, 0);
      if (runtime.empty()) exec_in_rail_namespace(c, plan.sysfs_mount_plan, argv, envs);
      auto a = c_strings(argv);
      ::execvp(a[0], a.data());
      ::_exit(127);
    }
    int status = 0;
    for (;;) {
      const pid_t done = ::waitpid(child, &status, WNOHANG);
      if (done == child) break;
      timespec tick{0, 200 * 1000 * 1000};
      const int sig = ::sigtimedwait(&sigs, nullptr, &tick);
      if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
        say(std::string("SIG") + signal_name(sig) + ": forwarding to CMD (pid " +
            std::to_string(child) + ")");
        ::kill(child, sig);
      }
    }
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    say("CMD exited with status " + std::to_string(rc));
    if (!rails_leave(c, key, lock) && rc == 0) rc = 1;
    return rc;
  } catch (...) {
    rails_leave(c, key, lock);
    throw;
  }
}

}  // namespace gdrproxy::harness
