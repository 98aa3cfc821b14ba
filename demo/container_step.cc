// The demo's container step. The idea not to miss: it is the product's real path, not a model of
// it: `gdrproxy oci prepare` edits a real runc bundle (seccomp listener, /dev of the grant, device
// cgroup), runc hands the listener to a real `gdrproxy agent`, and the container's own trace
// shows its decoded calls; the node it was not granted, made inside by its number, is refused by
// the device cgroup. Everything runs in a private mount namespace with stand-in nodes
// (standin_devices.h), and goes with the step.
#include "demo/container_step.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/program_path.h"
#include "demo/spawn.h"

namespace gdrproxy::demo {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The container: the host's own programs and libraries, read-only; what it runs.
json bundle_config(const std::string& self, const fs::path& rootfs) {
  json mounts = {{{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}},
                 {{"destination", "/dev"},
                  {"type", "tmpfs"},
                  {"source", "tmpfs"},
                  {"options", {"nosuid", "mode=755"}}},
                 {{"destination", "/tmp"}, {"type", "tmpfs"}, {"source", "tmpfs"}}};
  std::error_code ec;
  for (const char* d : {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"}) {
    if (!fs::exists(d, ec)) continue;
    const fs::path in = rootfs / fs::path(d).relative_path();
    if (fs::is_symlink(d, ec)) {
      fs::create_symlink(fs::read_symlink(d, ec), in, ec);
    } else {
      fs::create_directories(in, ec);
      mounts.push_back(
          {{"destination", d}, {"type", "bind"}, {"source", d}, {"options", {"rbind", "ro"}}});
    }
  }
  const std::string self_dir = fs::path(self).parent_path().string();
  fs::create_directories(rootfs / fs::path(self_dir).relative_path(), ec);
  mounts.push_back({{"destination", self_dir},
                    {"type", "bind"},
                    {"source", self_dir},
                    {"options", {"rbind", "ro"}}});
  const std::string script = self +
                             " demo device-calls uverbs /dev/infiniband/uverbs0 | sed -n '1,6p'; "
                             "echo '  ...'; echo '  uverbs1, not granted, made inside by its "
                             "number (231:193) and read:'; mknod /tmp/uverbs1 c 231 193 && "
                             "head -c1 /tmp/uverbs1 2>&1 | sed 's/^/    /'";
  return {
      {"ociVersion", "1.0.2"},
      {"process",
       {{"terminal", false},
        {"user", {{"uid", 0}, {"gid", 0}}},
        {"cwd", "/"},
        {"args", {"/bin/sh", "-c", script}},
        {"env", {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}},
        {"capabilities",
         {{"bounding", {"CAP_MKNOD"}}, {"effective", {"CAP_MKNOD"}}, {"permitted", {"CAP_MKNOD"}}}},
        {"noNewPrivileges", true}}},
      {"root", {{"path", "rootfs"}, {"readonly", true}}},
      {"hostname", "demo-ctr"},
      {"mounts", mounts},
      {"linux",
       {{"namespaces",
         {{{"type", "pid"}}, {{"type", "mount"}}, {{"type", "ipc"}}, {{"type", "uts"}}}},
        {"resources", {{"devices", {{{"allow", false}, {"access", "rwm"}}}}}}}}};
}

}  // namespace

int container_step(const std::string& self) {
  const std::string runc = program_path("runc");
  if (::geteuid() != 0 || runc.empty()) {
    std::cout << "skipped: a container needs root and runc (scripts/setup.sh installs runc)\n";
    return 0;
  }
  const fs::path d =
      fs::temp_directory_path() / ("gdrproxy-demo-ctr-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::create_directories(d / "bundle" / "rootfs", ec);
  fs::create_directories(d / "traces", ec);
  fs::permissions(d,
                  fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                      fs::perms::others_read | fs::perms::others_exec,
                  ec);
  std::ofstream(d / "bundle" / "config.json")
      << bundle_config(self, d / "bundle" / "rootfs").dump(1);
  std::ofstream(d / "agent.json")
      << R"({"version": 1, "containers": [{"match": {"id": "demo-*"}, "grants": ["uverbs0"],)"
      << R"( "grants_from_metadata": true, "trace": true}]})";
  const std::string D = d.string();
  // One private mount namespace for the agent, runc and the container: the stand-in nodes, and a
  // cgroup2 hierarchy for runc's device program.
  const std::string script =
      "set -e\n"
      "[ \"$(stat -f -c %T /sys/fs/cgroup)\" = cgroup2fs ] || mount -t cgroup2 none "
      "/sys/fs/cgroup\n"
      "'" +
      self + "' agent --socket " + D + "/a.sock --ctl-socket " + D + "/a.ctl --config " + D +
      "/agent.json --trace-dir " + D + "/traces >" + D +
      "/agent.log 2>&1 &\n"
      "agent=$!\n"
      "i=0; while [ ! -S " +
      D +
      "/a.sock ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done\n"
      "echo '$ gdrproxy oci prepare BUNDLE --grant uverbs0 --listener AGENT_SOCKET --no-sysfs'\n"
      "'" +
      self + "' oci prepare " + D + "/bundle --grant uverbs0 --listener " + D +
      "/a.sock --no-sysfs 2>&1 | sed 's|" + D +
      "|DIR|g'\n"
      "echo '$ runc run demo-ctr    (the container: calls on uverbs0, then the node of uverbs1)'\n"
      "'" +
      runc + "' --root " + D + "/runc run --bundle " + D +
      "/bundle demo-ctr || true\n"
      "i=0; while ! grep -q 'demo-ctr ended' " +
      D +
      "/agent.log && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done\n"
      "kill $agent 2>/dev/null || true; wait $agent 2>/dev/null || true\n"
      "echo '$ the agent:'; grep 'container demo-ctr' " +
      D +
      "/agent.log | sed 's/^/  /'\n"
      "echo '$ gdrproxy trace summarize (the container'\"'\"'s own trace):'\n"
      "'" +
      self + "' trace summarize " + D + "/traces/demo-ctr.jsonl\n";
  const int rc =
      run_and_wait({"/bin/sh", "-c", script}, {.standin = true, .limit_s = 0, .after_line = {}});
  fs::remove_all(d, ec);
  return rc;
}

}  // namespace gdrproxy::demo
