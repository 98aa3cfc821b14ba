// See containers.h.
#include "harness/containers.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "base/file_io.h"
#include "base/owner_file.h"
#include "base/program_path.h"
#include "harness/output.h"
#include "harness/run_dir.h"
#include "harness/spawn.h"

namespace gdrproxy::harness {
namespace {

namespace fs = std::filesystem;

std::string dir_of(const Identity& id, const std::string& key) {
  return id.paths.run_dir + "/ctr-" + key;
}

// podman and its global options: without systemd as init there is no systemd cgroup manager.
std::vector<std::string> podman() {
  std::vector<std::string> p = {"podman"};
  std::error_code ec;
  if (!fs::is_directory("/run/systemd/system", ec)) {
    p.push_back("--cgroup-manager");
    p.push_back("cgroupfs");
  }
  return p;
}

int quiet(std::vector<std::string> argv) {
  return run_program({std::move(argv), ChildOutput::kDiscard, "", {}, 60});
}

std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

std::string container_id(const Identity& id, const std::string& key) {
  if (key == "node") return "gdrh-" + id.node;
  return "gdrh-" + id.node + "-r" + (key.rfind("rank-", 0) == 0 ? key.substr(5) : key);
}

bool delete_container(const Identity& id, const std::string& key) {
  const std::string dir = dir_of(id, key), cid = container_id(id, key);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return true;
  std::string rt = read_text(dir + "/runtime.name").value_or("");
  while (!rt.empty() && (rt.back() == '\n' || rt.back() == ' ')) rt.pop_back();
  if (rt == "podman" && !program_path("podman").empty()) {
    const auto pm = podman();
    if (quiet(cat(pm, {"container", "exists", cid})) == 0) {
      quiet(cat(pm, {"rm", "-f", "-t", "0", cid}));
      if (quiet(cat(pm, {"container", "exists", cid})) == 0) {
        say("cannot remove container " + cid + " (podman rm -f " + cid + ")");
        return false;
      }
    }
  } else if (!rt.empty() && fs::is_directory(dir + "/runtime", ec) && !program_path(rt).empty()) {
    const std::string root = dir + "/runtime";
    quiet({rt, "--root", root, "delete", "-f", cid});
    if (quiet({rt, "--root", root, "state", cid}) == 0) {
      say("cannot delete container " + cid + " (" + rt + " --root " + root + ")");
      return false;
    }
  }
  fs::remove_all(dir, ec);
  return true;
}

void stop_agent(const Identity& id) {
  const std::string pidfile = id.paths.run_dir + "/agent.pid";
  if (const auto r = read_owner_file(pidfile); r && owner_alive(*r)) {
    ::kill(r->pid, SIGTERM);
    // Until it is reaped, not only dead: whoever looks next must not find it.
    for (int i = 0; i < 50 && owner_present(*r); ++i) {
      ::waitpid(r->pid, nullptr, WNOHANG);  // reaped here when this process started it
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (owner_alive(*r)) ::kill(r->pid, SIGKILL);
  }
  ::unlink(pidfile.c_str());
}

bool delete_all_containers(const Identity& id) {
  bool ok = true;
  std::error_code ec;
  std::vector<std::string> keys;
  for (const auto& e : fs::directory_iterator(id.paths.run_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("ctr-", 0) == 0 && e.is_directory(ec)) keys.push_back(name.substr(4));
  }
  for (const auto& k : keys) ok = delete_container(id, k) && ok;
  stop_agent(id);
  return ok;
}

}  // namespace gdrproxy::harness
