// See lifecycle.h. The order of each step is the bash harness's, whose lines the tests read.
#include "harness/lifecycle.h"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "base/error.h"
#include "base/escape.h"
#include "base/file_io.h"
#include "base/lists.h"
#include "harness/containers.h"
#include "harness/output.h"
#include "harness/spawn.h"
#include "netns/move.h"
#include "netns/rdma_sysfs.h"
#include "netns/restore.h"

namespace gdrproxy::harness {
namespace {

namespace fs = std::filesystem;

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool any_alive(const StatePaths& p) {
  return !alive_owner_pids(p).empty();
}

// `gdrproxy netns restore --journal J`, in this process; its lines on log(). true when every
// rail is back.
bool restore(const std::string& journal) {
  try {
    const int problems = netns::restore_command(journal, log());
    if (problems)
      log() << "gdrproxy netns: " << problems
            << " problem(s): interface(s) not restored or link(s) refused\n";
    return problems == 0;
  } catch (const std::exception& e) {
    log() << "gdrproxy netns: " << e.what() << "\n";
    return false;
  }
}

// The container's bootstrap link (a macvlan the harness made), deleted before the rails go back.
void delete_bootstrap_link(const Context& c) {
  std::string boot;
  try {
    boot = load_plan(c.id.paths.plan).bootstrap_iface;
  } catch (const Failure&) {
    return;
  }
  if (boot.empty()) return;
  std::string out;
  run_capturing({{"ip", "-d", "-o", "link", "show", "dev", boot},
                 ChildOutput::kDiscard,
                 c.id.paths.ctr_netns},
                out);
  if (out.find(" macvlan ") == std::string::npos) return;
  if (run_program({{"ip", "link", "del", "dev", boot}, ChildOutput::kLog, c.id.paths.ctr_netns}) !=
      0)
    say("cannot delete the container's bootstrap link " + boot);
}

// A new network namespace pinned by a bind mount at `path` (as `unshare --net=PATH true`): a
// child unshares and mounts its own namespace there, in the mount namespace it shares with us.
bool pin_new_netns(const std::string& path) {
  {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    ::close(fd);
  }
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    if (::unshare(CLONE_NEWNET) != 0) ::_exit(1);
    ::_exit(::mount("/proc/self/ns/net", path.c_str(), nullptr, MS_BIND, nullptr) == 0 ? 0 : 1);
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int ip(const std::vector<std::string>& args, const std::string& netns = "") {
  std::vector<std::string> argv = {"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program({argv, ChildOutput::kLog, netns});
}

}  // namespace

Context make_context(const Environment& env) {
  Context c;
  c.env = env;
  c.id = identify(env, this_host());
  if (env_set(env, "GDRPROXY")) {
    const std::string gp = env.at("GDRPROXY");
    if (::access(gp.c_str(), X_OK) != 0)
      throw Failure("gdrproxy not found or not executable at '" + gp +
                    "' (set GDRPROXY=/path/to/gdrproxy)");
    std::error_code ec;
    const auto abs = fs::canonical(gp, ec);
    c.gdrproxy = ec ? gp : abs.string();
  } else {
    std::error_code ec;
    c.gdrproxy = fs::read_symlink("/proc/self/exe", ec).string();
  }
  c.arp_profile = env_or(env, "GDR_HARNESS_ARP_PROFILE", "multirail");
  return c;
}

void need_root(const std::string& verb) {
  if (::geteuid() != 0)
    throw Failure(verb + " needs root (it moves network interfaces and mounts namespaces)");
}

std::vector<pid_t> pids_in_netns(const std::string& path) {
  std::vector<pid_t> out;
  struct stat want {};
  if (::stat(path.c_str(), &want) != 0) return out;
  const std::string link = "net:[" + std::to_string(want.st_ino) + "]";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec2;
    if (fs::read_symlink(e.path() / "ns" / "net", ec2).string() == link)
      out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

std::vector<std::string> uverbs_grants(const Plan& plan) {
  std::vector<std::string> out;
  for (const auto& ib : plan.ibdevs())
    for (const auto& n : netns::verbs_nodes_of_ibdev("/sys", ib)) out.push_back(n);
  return out;
}

void clean_dead_runs(const Context& c) {
  const StatePaths& p = c.id.paths;
  if (!delete_all_containers(c.id))
    throw Failure("cannot delete a killed run's container (state under " + p.run_dir + ")");
  if (is_mount_point(p.ctr_netns)) {
    auto inside = pids_in_netns(p.ctr_netns);
    if (!inside.empty()) {
      std::string list;
      for (const pid_t x : inside) list += (list.empty() ? "" : " ") + std::to_string(x);
      say("stopping " + std::to_string(inside.size()) +
          " process(es) left in the container: " + list);
      for (const pid_t x : inside) ::kill(x, SIGKILL);
      for (int i = 0; i < 50 && !inside.empty(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        inside = pids_in_netns(p.ctr_netns);
      }
      if (!inside.empty())
        throw Failure("processes " + list + " do not leave the container's network namespace");
    }
    delete_bootstrap_link(c);
  }
  if (exists(p.journal)) {
    say("a journal is present: gdrproxy netns restore --journal " + p.journal);
    if (!restore(p.journal))
      throw Failure("gdrproxy netns restore failed; state kept in " + p.state + " (journal " +
                    p.journal + ")");
  }
  if (is_mount_point(p.ctr_netns) && ::umount2(p.ctr_netns.c_str(), 0) != 0)
    throw Failure("cannot unmount the container's network namespace " + p.ctr_netns);
  std::error_code ec;
  fs::remove_all(p.run_dir, ec);
  if (ec) throw Failure("cannot remove " + p.run_dir);
}

bool rails_enter(const Context& c, RailsMode mode, const std::string& key, bool reclaim) {
  const StatePaths& p = c.id.paths;
  std::error_code ec;
  if (reclaim && fs::is_directory(p.run_dir, ec) && !any_alive(p)) {
    const auto dead = owners(p);
    if (exists(p.journal) || is_mount_point(p.ctr_netns) || !dead.empty()) {
      std::string list;
      for (const auto& o : dead)
        list += (list.empty() ? "" : ", ") + fs::path(o.file).filename().string() + " pid " +
                (o.record.pid > 0 ? std::to_string(o.record.pid) : std::string("?"));
      const std::string named = list.empty() ? "none recorded" : list;
      // Its own lines only if it fails (then the state stays for `teardown`).
      std::optional<Capture> capture(std::in_place);
      try {
        clean_dead_runs(c);
      } catch (const Failure& f) {
        const std::string lines = capture->text();
        capture.reset();
        log() << lines << kProg << ": error: " << gdrproxy::printable(f.what()) << "\n";
        throw Failure("cannot reclaim node " + c.id.node + "'s stale state (owners " + named +
                          " are dead); run '" + kProg + " teardown'",
                      125);
      }
      capture.reset();
      say("reclaimed node " + c.id.node + "'s stale state: every recorded owner is dead (" + named +
          "); rails given back, containers removed, before " + key + " attaches");
    }
  }
  if (!exists(p.journal)) return false;
  if (!any_alive(p))
    throw Failure("a killed run left rails moved (journal " + p.journal + "); run '" +
                      std::string(kProg) + " teardown' first",
                  125);
  std::string run_mode = read_text(p.run_dir + "/mode").value_or("");
  while (!run_mode.empty() && run_mode.back() == '\n') run_mode.pop_back();
  if (mode == RailsMode::kNode || run_mode != "shared")
    throw Failure("a run of node " + c.id.node + " is already alive (journal " + p.journal +
                      "); runs share a node's rails with GDR_HARNESS_CONTAINER=rank in every "
                      "rank, or as Slurm steps",
                  125);
  if (owner_file_alive(owner_file_of(p, key)))
    throw Failure(key_words(key) + " already runs on node " + c.id.node, 125);
  return true;
}

void rails_setup(const Context& c, const Plan& plan, RailsMode mode, const std::string& key,
                 pid_t owner, bool joined) {
  const StatePaths& p = c.id.paths;
  const std::string file = owner_file_of(p, key);
  std::error_code ec;
  fs::create_directories(fs::path(file).parent_path(), ec);
  const auto rec = owner_record_of(owner);
  if (!rec) throw Failure("--owner " + std::to_string(owner) + ": no such process", 125);
  write_owner_file(file, *rec);
  const std::string rails = join_list(plan.netdevs());
  if (joined) {
    say(key_words(key) + " joins node " + c.id.node +
        "'s running container network namespace (rails " + rails + ")");
    return;
  }
  {
    std::ofstream m(p.run_dir + "/mode", std::ios::trunc);
    m << (mode == RailsMode::kNode ? "node" : "shared") << "\n";
  }
  if (!pin_new_netns(p.ctr_netns)) {
    fs::remove_all(p.run_dir, ec);
    throw Failure(
        "cannot make the container's network namespace (unshare --net=" + p.ctr_netns + ")", 125);
  }
  netns::MoveOptions mo;
  mo.target_path = p.ctr_netns;
  mo.ifaces = plan.netdevs();
  mo.profile = c.arp_profile;
  mo.journal = p.journal;
  mo.allow_bootstrap = env_true(c.env, "ALLOW_BOOTSTRAP_RDMA_IFACE");
  say("moving rails " + rails + " into the container: gdrproxy netns move");
  try {
    netns::move_rails(mo, log());
  } catch (const std::exception& e) {
    log() << "gdrproxy netns: " << e.what() << "\n";
    throw Failure("gdrproxy netns move failed (rails " + rails + ")", 125);
  }
  ip({"link", "set", "lo", "up"}, p.ctr_netns);
  if (env_set(c.env, "GDR_HARNESS_BOOTSTRAP_ADDR")) {
    const std::string addr = c.env.at("GDR_HARNESS_BOOTSTRAP_ADDR"), &boot = plan.bootstrap_iface;
    if (boot.empty())
      throw Failure("GDR_HARNESS_BOOTSTRAP_ADDR is set but the plan names no bootstrap interface",
                    125);
    const std::string mv = ("ghb" + std::to_string(::getpid())).substr(0, 15);
    say("bootstrap link: macvlan of " + boot + " as " + boot + " in the container, " + addr);
    const bool ok =
        ip({"link", "add", mv, "link", boot, "type", "macvlan", "mode", "bridge"}) == 0 &&
        ip({"link", "set", mv, "netns", p.ctr_netns}) == 0 &&
        ip({"link", "set", mv, "name", boot}, p.ctr_netns) == 0 &&
        ip({"addr", "add", addr, "dev", boot}, p.ctr_netns) == 0 &&
        ip({"link", "set", boot, "up"}, p.ctr_netns) == 0;
    if (!ok) {
      run_program({{"ip", "link", "del", mv}, ChildOutput::kDiscard});
      throw Failure("cannot give the container a bootstrap link on " + boot + " (" + addr + ")",
                    125);
    }
  }
}

bool rails_leave(const Context& c, const std::string& key, RunLock& lock) {
  const StatePaths& p = c.id.paths;
  lock.acquire();
  bool ok = delete_container(c.id, key);
  ::unlink(owner_file_of(p, key).c_str());
  if (const size_t others = alive_owner_pids(p).size(); others > 0) {
    say(key_words(key) + " leaves; " + std::to_string(others) + " other run(s) of node " +
        c.id.node + " still hold the rails");
    lock.release();
    return ok;
  }
  stop_agent(c.id);
  if (is_mount_point(p.ctr_netns)) delete_bootstrap_link(c);
  if (exists(p.journal)) {
    say("giving the rails back: gdrproxy netns restore --journal " + p.journal);
    ok = restore(p.journal) && ok;
  }
  if (ok) {
    ::unlink((p.journal + ".done").c_str());
    if (is_mount_point(p.ctr_netns) && ::umount2(p.ctr_netns.c_str(), 0) != 0) ok = false;
    std::error_code ec;
    if (ok) fs::remove_all(p.run_dir, ec);
  }
  lock.release();
  if (!ok)
    log() << kProg << ": error: rails not all given back; journal kept in " << p.run_dir << " (run "
          << kProg << " teardown)\n";
  return ok;
}

}  // namespace gdrproxy::harness
