// `attach`, `detach` and `teardown`: the rails for processes another program starts (the Slurm
// plugin's tasks), given back by the last holder, or by teardown after a kill. The work is
// lifecycle.cc's; this file is the verbs' order and lines.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>

#include "base/unique_fd.h"
#include "harness/output.h"
#include "harness/verbs.h"

namespace gdrproxy::harness {
namespace {

namespace fs = std::filesystem;

// The node's prepare lock: one attach prepares a node, the others wait for its plan.
UniqueFd prepare_lock(const Identity& id) {
  std::error_code ec;
  fs::create_directories(id.paths.state, ec);
  const std::string path = id.paths.state + "/prepare.lock";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  for (int i = 0; fd && i < 2400; ++i) {
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return fd;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw Failure("another prepare of node " + id.node + " holds " + path + " for 120 s", 125);
}

std::string pids_text(const std::vector<pid_t>& pids) {
  std::string s;
  for (const pid_t p : pids) s += (s.empty() ? "" : " ") + std::to_string(p);
  return s;
}

}  // namespace

int attach(const Context& c, const AttachArgs& a, std::ostream& out) {
  const std::string proc = "/proc/" + std::to_string(a.owner) + "/stat";
  if (::access(proc.c_str(), R_OK) != 0)
    throw Failure("--owner " + std::to_string(a.owner) + ": no such process");
  need_root("attach");
  if (a.prepare) {
    const UniqueFd lock = prepare_lock(c.id);
    struct stat st {};
    if (::stat(c.id.paths.plan.c_str(), &st) != 0) {
      say("node " + c.id.node + " has no plan: preparing it");
      try {
        prepare(c, log());  // its summary on stderr: stdout is the caller's to act on
      } catch (const Failure& f) {
        log() << kProg << ": error: " << f.what() << "\n";
        throw Failure("prepare failed on node " + c.id.node, 125);
      }
    }
  }
  const Plan plan = load_plan(c.id.paths.plan);
  RunLock lock(c.id);
  lock.acquire();
  const bool joined = rails_enter(c, RailsMode::kShared, a.key, true);
  try {
    rails_setup(c, plan, RailsMode::kShared, a.key, a.owner, joined);
  } catch (...) {
    rails_leave(c, a.key, lock);
    throw;
  }
  lock.release();
  out << "netns=" << c.id.paths.ctr_netns << "\n";
  if (!plan.nccl_ib_hca.empty()) out << "env=NCCL_IB_HCA=" << plan.nccl_ib_hca << "\n";
  if (!plan.bootstrap_iface.empty())
    out << "env=NCCL_SOCKET_IFNAME=" << plan.bootstrap_iface << "\n";
  out << "env=GDR_HARNESS_NODE=" << c.id.node << "\n";
  if (!plan.sysfs_mount_plan.empty()) out << "sysfs_plan=" << plan.sysfs_mount_plan << "\n";
  for (const auto& u : uverbs_grants(plan)) out << "uverbs=" << u << "\n";
  out << "gdrproxy=" << c.gdrproxy << "\n";
  return 0;
}

int detach(const Context& c, const std::string& key) {
  need_root("detach");
  struct stat st {};
  if (::stat(owner_file_of(c.id.paths, key).c_str(), &st) != 0) {
    say(key + " holds nothing on node " + c.id.node);
    return 0;
  }
  RunLock lock(c.id);
  return rails_leave(c, key, lock) ? 0 : 1;
}

int teardown(const Context& c) {
  need_root("teardown");
  const StatePaths& p = c.id.paths;
  struct stat st {};
  if (::lstat(p.state.c_str(), &st) != 0) {
    say("nothing to tear down on node " + c.id.node + " (" + p.state + " absent)");
    return 0;
  }
  // A run still alive, or its CMD outliving a killed harness: stop them first.
  auto pids = alive_owner_pids(p);
  if (!pids.empty()) {
    say("a run is alive (harness pid " + pids_text(pids) +
        "): SIGTERM, it gives its rails back itself");
    for (const pid_t x : pids) ::kill(x, SIGTERM);
    for (int i = 0; i < 100 && !alive_owner_pids(p).empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    pids = alive_owner_pids(p);
    if (!pids.empty()) {
      say("harness pid " + pids_text(pids) + " still alive after 10 s: SIGKILL");
      for (const pid_t x : pids) ::kill(x, SIGKILL);
      for (int i = 0; i < 50 && !alive_owner_pids(p).empty(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  clean_dead_runs(c);
  std::error_code ec;
  fs::remove_all(p.state, ec);
  if (ec) throw Failure("cannot remove " + p.state);
  if (!c.id.state_from_env) ::rmdir("/run/gdr-harness");
  say("node " + c.id.node + " torn down: no rail left moved, " + p.state + " removed");
  return 0;
}

}  // namespace gdrproxy::harness
