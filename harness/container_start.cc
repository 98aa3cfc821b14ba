// See container_start.h.
#include "harness/container_start.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "base/file_io.h"
#include "base/lists.h"
#include "base/owner_file.h"
#include "base/program_path.h"
#include "harness/containers.h"
#include "harness/output.h"
#include "harness/run_dir.h"
#include "harness/spawn.h"

namespace gdrproxy::harness {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// The capabilities of a default Docker container: CMD gets them in every runtime (ping and the
// like work as in the user's usual containers; the device cgroup still refuses device nodes).
const std::vector<std::string> kCaps = {
    "CAP_CHOWN",   "CAP_DAC_OVERRIDE", "CAP_FSETID",           "CAP_FOWNER",
    "CAP_MKNOD",   "CAP_NET_RAW",      "CAP_SETGID",           "CAP_SETUID",
    "CAP_SETFCAP", "CAP_SETPCAP",      "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
    "CAP_KILL",    "CAP_AUDIT_WRITE"};

bool installed(const std::string& name) {
  return !program_path(name).empty();
}

// The runtime that does the work under the shim: runc or crun itself, or under podman
// GDR_HARNESS_PODMAN_RUNTIME (default runc where installed, else crun).
std::string real_runtime(const Environment& env, const std::string& runtime) {
  if (runtime != "podman") return runtime;
  if (env_set(env, "GDR_HARNESS_PODMAN_RUNTIME")) return env.at("GDR_HARNESS_PODMAN_RUNTIME");
  return installed("runc") ? "runc" : "crun";
}

std::string dir_of(const Context& c, const std::string& key) {
  return c.id.paths.run_dir + "/ctr-" + key;
}

std::string cwd() {
  std::error_code ec;
  return fs::current_path(ec).string();
}

// An empty root file system for the host's /usr, /etc and /opt (bound read-only); returns every
// directory to bind (a host without a merged /usr has /bin, /lib... of its own).
std::vector<std::string> empty_root(const std::string& root) {
  std::error_code ec;
  for (const char* d : {"usr", "etc", "opt", "proc", "dev", "sys", "tmp", "run", "root"})
    fs::create_directories(root + "/" + d, ec);
  std::vector<std::string> binds;
  for (const char* d : {"bin", "sbin", "lib", "lib32", "lib64", "libx32"}) {
    const std::string host = std::string("/") + d, mine = root + "/" + d;
    if (fs::is_symlink(host, ec)) {
      if (!fs::is_symlink(mine, ec)) fs::create_symlink(fs::read_symlink(host, ec), mine, ec);
    } else if (fs::is_directory(host, ec)) {
      fs::create_directories(mine, ec);
      binds.push_back(host);
    }
  }
  for (const char* d : {"/usr", "/etc", "/opt"})
    if (fs::is_directory(d, ec)) binds.push_back(d);
  return binds;
}

// The bundle's config.json for CMD (see `gdr-harness run --help`).
void write_bundle(const Context& c, const std::string& bundle, const ContainerRequest& r) {
  std::string root = bundle + "/rootfs";
  std::vector<std::string> binds;
  std::error_code ec;
  if (env_set(c.env, "GDR_HARNESS_ROOTFS"))
    root = fs::canonical(c.env.at("GDR_HARNESS_ROOTFS"), ec).string();
  else
    binds = empty_root(root);
  const std::string dir = cwd();
  if (dir != "/") binds.push_back(dir);
  rlimit ml{};
  ::getrlimit(RLIMIT_MEMLOCK, &ml);
  const uint64_t memlock = ml.rlim_max == RLIM_INFINITY ? UINT64_MAX : ml.rlim_max;
  const std::string user = env_or(c.env, "GDR_HARNESS_USER", "0:0");
  unsigned long uid = 0, gid = 0;
  try {
    const size_t colon = user.find(':');
    uid = std::stoul(user.substr(0, colon));
    gid = colon == std::string::npos ? 0 : std::stoul(user.substr(colon + 1));
  } catch (const std::exception&) {
    throw Failure("GDR_HARNESS_USER='" + user + "' is not uid:gid", 125);
  }
  Json mounts = Json::array({
      {{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}},
      {{"destination", "/dev"},
       {"type", "tmpfs"},
       {"source", "tmpfs"},
       {"options", {"nosuid", "strictatime", "mode=755", "size=65536k"}}},
      {{"destination", "/dev/pts"},
       {"type", "devpts"},
       {"source", "devpts"},
       {"options", {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}}},
      {{"destination", "/dev/shm"},
       {"type", "tmpfs"},
       {"source", "shm"},
       {"options", {"nosuid", "noexec", "nodev", "mode=1777", "size=1g"}}},
      {{"destination", "/tmp"},
       {"type", "tmpfs"},
       {"source", "tmpfs"},
       {"options", {"nosuid", "nodev", "mode=1777"}}},
      {{"destination", "/run"},
       {"type", "tmpfs"},
       {"source", "tmpfs"},
       {"options", {"nosuid", "nodev", "mode=755"}}},
      {{"destination", "/sys"},
       {"type", "sysfs"},
       {"source", "sysfs"},
       {"options", {"nosuid", "noexec", "nodev", "ro"}}},
  });
  for (const auto& b : binds)
    mounts.push_back({{"destination", b},
                      {"type", "bind"},
                      {"source", b},
                      {"options", {"rbind", b == dir ? "rw" : "ro"}}});
  const Json caps = kCaps;
  const Json config = {
      {"ociVersion", "1.0.2"},
      {"hostname", c.id.host},
      {"process",
       {{"terminal", false},
        {"user", {{"uid", uid}, {"gid", gid}}},
        {"cwd", dir},
        {"args", r.cmd},
        {"env", r.env},
        {"noNewPrivileges", true},
        {"capabilities", {{"bounding", caps}, {"effective", caps}, {"permitted", caps}}},
        {"rlimits", {{{"type", "RLIMIT_MEMLOCK"}, {"hard", memlock}, {"soft", memlock}}}}}},
      {"root", {{"path", root}, {"readonly", true}}},
      {"mounts", mounts},
      {"linux",
       {{"namespaces",
         {{{"type", "pid"}},
          {{"type", "mount"}},
          {{"type", "ipc"}},
          {{"type", "uts"}},
          {{"type", "network"}, {"path", c.id.paths.ctr_netns}}}},
        {"resources", {{"devices", {{{"allow", false}, {"access", "rwm"}}}}}},
        {"maskedPaths", {"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug"}},
        {"readonlyPaths",
         {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}}}}};
  std::ofstream out(bundle + "/config.json", std::ios::trunc);
  out << config.dump(2) << "\n";
  if (!out) throw Failure("cannot write the container's config.json in " + bundle, 125);
}

// The node's agent on run/agent.sock granting exactly `grants` to the node's containers
// (gdrh-<node>, gdrh-<node>-rN), matched on the listenerMetadata line the shim writes from each
// container's runtime.json (under podman the runtime's container id is podman's own); traces to
// GDR_HARNESS_LOG_DIR with DEBUG_ALL. Returns its socket.
std::string start_agent(const Context& c, const std::string& grants) {
  const std::string run = c.id.paths.run_dir, sock = run + "/agent.sock";
  const bool trace = env_true(c.env, "DEBUG_ALL");
  std::vector<std::string> argv = {
      c.gdrproxy,         "agent",    "--socket",         sock, "--ctl-socket",
      run + "/agent.ctl", "--config", run + "/agent.json"};
  if (trace) {
    const std::string tdir =
        env_or(c.env, "GDR_HARNESS_LOG_DIR", "/tmp") + "/gdrproxy-trace." + c.id.node;
    std::error_code ec;
    fs::create_directories(tdir, ec);
    argv.push_back("--trace-dir");
    argv.push_back(tdir);
    say("DEBUG_ALL=1: gdrproxy traces the container's device calls into " + tdir);
  }
  const Json g = split_list(grants);
  const std::string id = "gdrh-" + c.id.node;
  const Json config = {{"version", 1},
                       {"containers",
                        {{{"match", {{"metadata", "gdr-harness-container=" + id + "\n*"}}},
                          {"grants", g},
                          {"grants_from_metadata", true},
                          {"trace", trace}},
                         {{"match", {{"metadata", "gdr-harness-container=" + id + "-r*"}}},
                          {"grants", g},
                          {"grants_from_metadata", true},
                          {"trace", trace}}}}};
  std::ofstream(run + "/agent.json", std::ios::trunc) << config.dump(2) << "\n";
  const std::string log_path = run + "/agent.log";
  const pid_t pid = ::fork();
  if (pid < 0) throw Failure("cannot start gdrproxy agent", 125);
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    const int null = ::open("/dev/null", O_RDONLY);
    const int logfd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(null, 0);
    ::dup2(logfd, 1);
    ::dup2(logfd, 2);
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    ::_exit(127);
  }
  if (const auto rec = owner_record_of(pid)) write_owner_file(run + "/agent.pid", *rec);
  for (int i = 0; i < 100; ++i) {
    if (read_text(log_path, kWholeFile).value_or("").find("gdrproxy agent: serving") !=
        std::string::npos)
      return sock;
    if (::waitpid(pid, nullptr, WNOHANG) == pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::istringstream lines(read_text(log_path, kWholeFile).value_or(""));
  for (std::string l; std::getline(lines, l);) log() << "  agent: " << l << "\n";
  throw Failure("gdrproxy agent did not start on " + sock + " (log above)", 125);
}

// The runtime shim's config for this container, <ctr dir>/runtime.json (the operator file of
// `gdrproxy runtime`, written per container): the real runtime under the shim, the agent's
// listener, exactly `grants` as the most the container may ask for, the synthetic /sys only
// where something is granted and the plan has one, and the listenerMetadata line
// gdr-harness-container=<id> by which the node's agent knows the container.
std::string write_shim_config(const Context& c, const ContainerRequest& r,
                              const std::string& sock) {
  const std::string path = dir_of(c, r.key) + "/runtime.json", id = container_id(c.id, r.key);
  const Json g = split_list(r.grants);
  const Json config = {{"version", 1},
                       {"comment", "gdr-harness: container " + id},
                       {"runtime", real_runtime(c.env, r.runtime)},
                       {"listener", sock},
                       {"grants", g},
                       {"sysfs", r.plan_has_sysfs && !g.empty()},
                       {"metadata", "gdr-harness-container=" + id}};
  std::ofstream out(path, std::ios::trunc);
  out << config.dump(2) << "\n";
  if (!out) throw Failure("cannot write the runtime shim's config in " + dir_of(c, r.key), 125);
  return path;
}

// podman run of CMD whose OCI runtime is the shim (a link named gdrproxy-runtime, its config as
// the runtime flag gdrproxy-config, since podman passes its runtime no environment): the runc
// path's container, with the harness's own rlimits and the granted devices as --device.
std::vector<std::string> podman_command(const Context& c, const ContainerRequest& r,
                                        const std::string& cfg) {
  const std::string dir = dir_of(c, r.key), link = dir + "/gdrproxy-runtime";
  std::error_code ec;
  fs::remove(link, ec);
  fs::create_symlink(c.gdrproxy, link, ec);
  std::vector<std::string> a = {"podman"};
  if (!fs::is_directory("/run/systemd/system", ec))
    a.insert(a.end(), {"--cgroup-manager", "cgroupfs"});
  a.insert(a.end(), {"--runtime",
                     link,
                     "--runtime-flag",
                     "gdrproxy-config=" + cfg,
                     "run",
                     "--rm",
                     "--name",
                     container_id(c.id, r.key),
                     "--network",
                     "ns:" + c.id.paths.ctr_netns,
                     "--hostname",
                     c.id.host,
                     "--systemd=false",
                     "--pull",
                     "never",
                     "--user",
                     env_or(c.env, "GDR_HARNESS_USER", "0:0"),
                     "--cap-drop",
                     "all",
                     "--cap-add",
                     join_list(kCaps),
                     "--security-opt",
                     "no-new-privileges",
                     "--pids-limit=-1",
                     "--read-only"});
  // The harness's own limits: podman's defaults may be above this node's hard limits, which the
  // runtime, without CAP_SYS_RESOURCE, cannot raise. RDMA memory registration pins pages, so
  // memlock is the hard limit for both; nproc at most kernel.pid_max, as podman hands it on.
  rlimit ml{}, nf{}, np{};
  ::getrlimit(RLIMIT_MEMLOCK, &ml);
  ::getrlimit(RLIMIT_NOFILE, &nf);
  ::getrlimit(RLIMIT_NPROC, &np);
  const std::string mls = ml.rlim_max == RLIM_INFINITY ? "-1" : std::to_string(ml.rlim_max);
  auto files = [](rlim_t v) { return std::to_string(v == RLIM_INFINITY ? 1048576 : v); };
  unsigned long long pid_max = 32768;
  std::ifstream("/proc/sys/kernel/pid_max") >> pid_max;
  const unsigned long long procs =
      np.rlim_max == RLIM_INFINITY || np.rlim_max > pid_max ? pid_max : np.rlim_max;
  a.insert(a.end(), {"--ulimit", "memlock=" + mls + ":" + mls, "--ulimit",
                     "nofile=" + files(nf.rlim_cur) + ":" + files(nf.rlim_max), "--ulimit",
                     "nproc=" + std::to_string(procs) + ":" + std::to_string(procs)});
  for (const auto& d : split_list(r.grants))
    a.insert(a.end(), {"--device", "/dev/infiniband/" + d});
  for (const auto& e : r.env) a.insert(a.end(), {"--env", e});
  const std::string here = cwd();
  if (here != "/") a.insert(a.end(), {"--volume", here + ":" + here + ":rw", "--workdir", here});
  if (env_set(c.env, "GDR_HARNESS_IMAGE")) {
    a.push_back(c.env.at("GDR_HARNESS_IMAGE"));
  } else if (env_set(c.env, "GDR_HARNESS_ROOTFS")) {
    a.insert(a.end(), {"--rootfs", fs::canonical(c.env.at("GDR_HARNESS_ROOTFS"), ec).string()});
  } else {
    const std::string root = dir + "/rootfs";
    for (const auto& d : empty_root(root)) a.insert(a.end(), {"--volume", d + ":" + d + ":ro"});
    a.insert(a.end(), {"--rootfs", root});
  }
  a.insert(a.end(), r.cmd.begin(), r.cmd.end());
  return a;
}

}  // namespace

std::string container_runtime(const Environment& env) {
  std::string rt = env_or(env, "GDR_HARNESS_RUNTIME", "");
  if (rt != "auto") return rt;
  for (const char* c : {"podman", "runc", "crun"})
    if (installed(c)) return c;
  return "auto";
}

void check_container_runtime(const Environment& env, const std::string& rt) {
  if (rt == "auto")
    throw Failure(
        "GDR_HARNESS_RUNTIME=auto, but none of podman, runc and crun is installed "
        "(apt-get install podman runc)",
        125);
  if (rt != "runc" && rt != "crun" && rt != "podman")
    throw Failure("GDR_HARNESS_RUNTIME='" + rt +
                      "': the container path drives podman, runc or crun, or auto (unset it to "
                      "run under gdrproxy run)",
                  125);
  if (!installed(rt))
    throw Failure("GDR_HARNESS_RUNTIME=" + rt + ", but " + rt +
                      " is not installed (apt-get install " + rt + ")",
                  125);
  const std::string real = real_runtime(env, rt);
  if (rt == "podman") {
    if (real != "runc" && real != "crun")
      throw Failure("GDR_HARNESS_PODMAN_RUNTIME='" + real +
                        "': podman's runtime under the shim is runc or crun",
                    125);
    if (!installed(real))
      throw Failure("GDR_HARNESS_RUNTIME=podman runs " + real + " under the runtime shim, but " +
                        real + " is not installed (apt-get install runc)",
                    125);
    if (env_set(env, "GDR_HARNESS_IMAGE") && env_set(env, "GDR_HARNESS_ROOTFS"))
      throw Failure(
          "GDR_HARNESS_IMAGE and GDR_HARNESS_ROOTFS both set: give podman an image or an "
          "unpacked root file system, not both",
          125);
  } else if (env_set(env, "GDR_HARNESS_IMAGE")) {
    throw Failure("GDR_HARNESS_IMAGE is podman's (GDR_HARNESS_RUNTIME=podman); " + rt +
                      " takes an unpacked root file system in GDR_HARNESS_ROOTFS",
                  125);
  }
  struct statfs fs_info {};
  const bool cgroup2 = ::statfs("/sys/fs/cgroup", &fs_info) == 0 &&
                       static_cast<unsigned long>(fs_info.f_type) == CGROUP2_SUPER_MAGIC;
  if (real == "crun" && !cgroup2)
    throw Failure("GDR_HARNESS_RUNTIME=" + rt +
                      ": crun drives cgroup v2 only, and /sys/fs/cgroup here is not a cgroup2 "
                      "hierarchy (v1 controllers beside it); use runc",
                  125);
  std::error_code ec;
  if (env_set(env, "GDR_HARNESS_ROOTFS") && !fs::is_directory(env.at("GDR_HARNESS_ROOTFS"), ec))
    throw Failure("GDR_HARNESS_ROOTFS='" + env.at("GDR_HARNESS_ROOTFS") +
                      "' is not a directory (an image's unpacked root file system)",
                  125);
}

std::vector<std::string> prepare_container(const Context& c, const ContainerRequest& r) {
  const std::string dir = dir_of(c, r.key), bundle = dir + "/bundle",
                    id = container_id(c.id, r.key);
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::ofstream(dir + "/runtime.name", std::ios::trunc) << r.runtime << "\n";
  if (r.runtime != "podman") {
    fs::create_directories(bundle, ec);
    fs::create_directories(dir + "/runtime", ec);
    write_bundle(c, bundle, r);
  }
  std::string sock;
  const std::string& run = c.id.paths.run_dir;
  if (env_set(c.env, "GDR_HARNESS_AGENT_SOCKET")) {
    sock = c.env.at("GDR_HARNESS_AGENT_SOCKET");
    struct stat st {};
    if (::stat(sock.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode))
      throw Failure("GDR_HARNESS_AGENT_SOCKET=" + sock + " is not a socket (is the agent running?)",
                    125);
    say("the operator's agent on " + sock + " serves the container " + id +
        " (its config decides)");
  } else if (owner_file_alive(run + "/agent.pid")) {
    sock = run + "/agent.sock";
    say("the node's gdrproxy agent on " + sock + " serves the container " + id);
  } else {
    sock = start_agent(c, r.grants);
    say("gdrproxy agent for node " + c.id.node + " on " + sock + ", granting " +
        (r.grants.empty() ? std::string("nothing") : r.grants) + " to " + id);
  }
  const std::string cfg = write_shim_config(c, r, sock);
  if (r.runtime == "podman") {
    auto cmd = podman_command(c, r, cfg);
    say("container " + id + " by podman, its OCI runtime the shim (gdrproxy runtime, config " +
        cfg + ") over " + real_runtime(c.env, r.runtime));
    return cmd;
  }
  // The shim takes the grant set from --grant (the bundle asks for no device itself) and the
  // real runtime from its config.
  std::vector<std::string> cmd = {c.gdrproxy, "runtime", "--config", cfg};
  if (!r.grants.empty()) cmd.insert(cmd.end(), {"--grant", r.grants});
  cmd.insert(cmd.end(), {"--", "--root", dir + "/runtime", "run", "--bundle", bundle, id});
  say("container " + id + " by " + r.runtime +
      " through the runtime shim (gdrproxy runtime, config " + cfg + "), bundle " + bundle);
  return cmd;
}

}  // namespace gdrproxy::harness
