// The rail hooks (see hook_command.h): state from stdin, pidfd-pinned target, exclusive journal
// directory, move with rollback, a usable RoCE GID on every rail that backs an RDMA device.
#include "proxy/oci/hook_command.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "base/command_failure.h"
#include "base/error.h"
#include "base/escape.h"
#include "base/owner_file.h"
#include "base/unique_fd.h"
#include "base/unix_request.h"
#include "netns/move.h"
#include "netns/netns_sysfs.h"
#include "netns/rdma_nl.h"
#include "netns/rdma_sysfs.h"
#include "netns/restore.h"
#include "proxy/oci/agent_sockets.h"
#include "proxy/oci/container_rails.h"
#include "proxy/oci/container_state.h"

namespace gdrproxy::proxy {
namespace {

constexpr size_t kMaxStateBytes = 1 << 20;
constexpr int kStdinTimeoutMs = 10000;

struct HookArgs {
  std::string state_dir = kRailStateDir;
  std::string ctl_socket = kAgentCtlSocket;
  std::vector<std::string> rails;
  std::string profile = "multirail";
  std::string id;  // poststop by hand
  bool allow_plain_rails = false;
};

// The state on stdin: bounded in size and time (a runtime writes it and closes the pipe).
std::string read_stdin() {
  std::string out;
  char buf[4096];
  pollfd p{0, POLLIN, 0};
  while (out.size() <= kMaxStateBytes) {
    if (::poll(&p, 1, kStdinTimeoutMs) != 1) throw Error("no container state on stdin");
    const ssize_t n = ::read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("reading stdin", errno);
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
  throw Error("container state on stdin is over 1 MiB");
}

ContainerProcessState::RuntimeState state_from_stdin() {
  std::string why;
  const auto st = parse_runtime_state(read_stdin(), why);
  if (!st) throw Error(why);
  return *st;
}

std::string journal_dir(const HookArgs& a, const std::string& id) {
  return container_rails_dir(a.state_dir, id);
}

// The path the journal names the container's network namespace by, for poststop to find it
// again: the bundle's own network namespace path when it has one (a pinned namespace outlives
// the container, and with it the virtual rails in it); "" when it names none.
std::string bundle_netns_path(const ContainerProcessState::RuntimeState& st, int nsfd) {
  if (st.bundle.empty()) return {};
  std::ifstream in(st.bundle + "/config.json");
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("linux") || !j["linux"].contains("namespaces") ||
      !j["linux"]["namespaces"].is_array())
    return {};
  for (const auto& ns : j["linux"]["namespaces"]) {
    if (!ns.is_object() || ns.value("type", "") != "network" || !ns.contains("path") ||
        !ns["path"].is_string())
      continue;
    const std::string path = ns["path"].get<std::string>();
    struct stat want {
    }, got{};
    if (::fstat(nsfd, &want) == 0 && ::stat(path.c_str(), &got) == 0 && want.st_dev == got.st_dev &&
        want.st_ino == got.st_ino)
      return path;
    throw Error("container " + printable(st.id) + ": its bundle names network namespace " +
                printable(path) + ", but its process is in another one");
  }
  return {};
}

// A bundle that names no network namespace path gets its namespace pinned beside the journal (a
// bind mount of the namespace file, NAME.netns for NAME.journal), and the rails go there by that
// path: it outlives the container's processes until poststop, `poststop --id` or the sweep has
// given the rails back. /proc/<pid>/ns/net would not do: Docker names no path (libnetwork's
// prestart hook pins the namespace and releases it only after the runtime's delete, so at
// poststop the rails sit in a namespace that no process and no journaled path leads to; when
// libnetwork lets it go, a virtual rail dies and a physical one falls back, unconfigured, to the
// initial namespace), and ctr or plain runc pin nothing (a virtual rail dies with the namespace
// when its last process exits). The pin is a mount in the runtime's mount namespace, where the
// hooks and the agent's sweep run.
std::string pin_of(const std::string& journal) {
  return journal.substr(0, journal.size() - std::string(".journal").size()) + ".netns";
}

void pin_netns(int nsfd, const std::string& pin) {
  const UniqueFd f(::open(pin.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!f) throw_errno("cannot make " + pin, errno);
  const std::string source = "/proc/self/fd/" + std::to_string(nsfd);
  if (::mount(source.c_str(), pin.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    const int e = errno;
    ::unlink(pin.c_str());
    throw_errno("cannot pin the network namespace at " + pin, e);
  }
}

int create_runtime(const HookArgs& a) {
  const auto st = state_from_stdin();
  const std::string who = "container " + printable(st.id);
  if (st.pid <= 0) throw Error(who + ": the state has no pid");
  if (a.rails.empty()) throw Error("no --rails to move");
  // Pin the container's process, open its network namespace, and check the process is still
  // the one pinned: the namespace is then the container's, not a reused pid's.
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, st.pid, 0)));
  if (!pidfd) throw Error(who + ": process " + std::to_string(st.pid) + " is gone");
  const UniqueFd ns(
      ::open(("/proc/" + std::to_string(st.pid) + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC));
  const std::string started = process_start_time(st.pid);
  const bool alive = ::syscall(SYS_pidfd_send_signal, pidfd.get(), 0, nullptr, 0) == 0;
  pidfd.reset();
  if (!ns || !alive || started.empty()) {
    throw Error(who + ": cannot open the network namespace of process " + std::to_string(st.pid));
  }
  // One directory per container (several hooks, one per NIC a CDI spec names, share it), one
  // journal per hook, claimed with O_EXCL: two hooks never write the same journal.
  const std::string dir = make_container_rails_dir(a.state_dir, st.id, who);
  {
    // Who the rails were moved for, for a later sweep (written whole, then renamed in place).
    const std::string owner = dir + "/" + kRailOwnerFile;
    try {
      write_owner_file(owner, {st.pid, started});
    } catch (const Error&) {
      throw Error(who + ": cannot write " + owner);
    }
  }
  std::string rails;
  for (const auto& r : a.rails) rails += (rails.empty() ? "" : "+") + r;
  const std::string claim = dir + "/netns-" + rails + ".claim";
  UniqueFd cfd(::open(claim.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!cfd)
    throw Error(who + ": " + claim + ": " + std::strerror(errno) +
                (errno == EEXIST
                     ? " (another hook is moving these rails, or an earlier move was never "
                       "given back: gdrproxy hook poststop --id ID)"
                     : ""));
  cfd.reset();
  netns::MoveOptions m;
  m.ifaces = a.rails;
  m.profile = a.profile;
  m.journal = dir + "/netns-" + rails + ".journal";
  m.target_path = bundle_netns_path(st, ns.get());
  const bool pinned = m.target_path.empty();
  if (pinned) {
    m.target_path = pin_of(m.journal);
    try {
      pin_netns(ns.get(), m.target_path);
    } catch (...) {
      ::unlink(claim.c_str());
      throw;
    }
  }
  try {
    move_container_rails({who, m, a.allow_plain_rails}, std::cerr);
  } catch (...) {
    // Nothing is left moved: the namespace's pin and the claim go too.
    if (pinned) unpin_netns(m.target_path);
    ::unlink(claim.c_str());
    throw;
  }
  return 0;
}

int poststop(const HookArgs& a) {
  const std::string id = a.id.empty() ? state_from_stdin().id : a.id;
  return restore_rails_dir(journal_dir(a, id)) == 0 ? 0 : 1;
}

int sweep(const HookArgs& a) {
  const auto report = [](const std::string& line) { std::cerr << "gdrproxy: " << line << "\n"; };
  return restore_rails_of_gone_containers(a.state_dir, report) == 0 ? 0 : 1;
}

}  // namespace

int restore_rails_of_gone_containers(const std::string& state_dir,
                                     const std::function<void(const std::string&)>& report) {
  int problems = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(state_dir, ec)) {
    if (!e.is_directory(ec) || e.is_symlink(ec)) continue;
    const auto owner = read_owner_file((e.path() / kRailOwnerFile).string());
    if (!owner) continue;  // not a rail hook's directory
    const pid_t pid = owner->pid;
    const std::string name = printable(e.path().filename().string());
    if (owner_alive(*owner)) continue;  // still running (a zombie is not: owner_file.h)
    // A directory that cannot be given back costs that container only: the agent still starts.
    int p = 0;
    std::string why;
    try {
      p = restore_rails_dir(e.path().string());
    } catch (const std::exception& x) {
      p = 1;
      why = ": " + printable(x.what());
    }
    problems += p;
    report("container " + name + " is gone (process " + std::to_string(pid) + "): its rails " +
           (p == 0 ? "were given back"
                   : "could not all be given back" + (why.empty() ? " (see above)" : why)));
  }
  return problems;
}

// Asks the agent to judge the new container's cgroup in the kernel from now on (its init exists,
// in its cgroup; the runtime has not handed its seccomp listener over yet). The agent's --lsm
// choice decides: an error (--lsm on, and it cannot) fails the hook, so the runtime does not
// create the container; no judge, or --lsm auto where it cannot, lets it go with a line.
int judge(const HookArgs& a) {
  const ContainerProcessState::RuntimeState st = state_from_stdin();
  if (st.pid <= 0) throw Error("container " + printable(st.id) + ": the state names no process");
  const std::string id = printable(st.id);
  const std::string answer =
      ask_unix_socket(a.ctl_socket, "the agent's control socket",
                      "judge-pending " + std::to_string(st.pid) + " " + id, 10000);
  const auto j = nlohmann::json::parse(answer, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw Error("container " + id + ": the agent answered " + printable(answer));
  if (j.contains("error"))
    throw Error("container " + id + ": the agent cannot judge it in the kernel: " +
                printable(j["error"].is_string() ? j["error"].get<std::string>() : j.dump()));
  if (j.value("judged", nlohmann::json(false)) == false)
    std::cerr << "gdrproxy hook judge: container " << id
              << " is not judged in the kernel from its creation: "
              << printable(j.value("why", std::string("the agent did not say why"))) << "\n";
  return 0;
}

void add_hook_commands(CLI::App& app, int& exit_code) {
  auto* hook = app.add_subcommand(
      "hook",
      "OCI hooks for containers served by `gdrproxy agent` (the container's state on stdin):\n"
      "create-runtime moves the rails into the container's network namespace with a profile\n"
      "(journal in /run/gdrproxy/<id>/), poststop gives them back exactly. `gdrproxy oci\n"
      "prepare --rails` writes both into a bundle. judge (createRuntime) has the agent's BPF\n"
      "LSM judge judge the container from its creation (`oci prepare --lsm-hook`).");
  hook->require_subcommand(1);
  auto a = std::make_shared<HookArgs>();
  auto* create = hook->add_subcommand("create-runtime", "Move the rails into the container");
  create->add_option("--rails", a->rails, "Interfaces to move")->delimiter(',')->required();
  create->add_option("--profile", a->profile, "netns profile for the moved rails")
      ->capture_default_str();
  create->add_flag("--allow-plain-rails", a->allow_plain_rails,
                   "Move rails that back no RDMA device (test rigs); by default such a rail fails");
  create->add_option("--state-dir", a->state_dir, "Where journals live")->capture_default_str();
  auto* post = hook->add_subcommand(
      "poststop",
      "Give the container's rails back (safe to run again, and by hand later).\n"
      "Example: gdrproxy hook poststop --id job42");
  post->add_option("--id", a->id, "Container id (default: from the state on stdin)");
  post->add_option("--state-dir", a->state_dir, "Where journals live")->capture_default_str();
  auto* sw = hook->add_subcommand(
      "sweep",
      "Give back the rails of every container whose process is gone (its poststop never ran\n"
      "or failed); `gdrproxy agent` does this at start.\n"
      "Example: gdrproxy hook sweep");
  sw->add_option("--state-dir", a->state_dir, "Where journals live")->capture_default_str();
  auto* jd = hook->add_subcommand(
      "judge",
      "createRuntime: have `gdrproxy agent --lsm` judge the container's cgroup in the kernel\n"
      "from now on, refusing every ioctl on a guarded device (NVIDIA, RDMA) until the agent\n"
      "has read the runtime's handover and given the container its grants. Fails (and with it\n"
      "the container's creation) when the agent runs --lsm on and cannot judge it, or does\n"
      "not answer; an agent without a judge, or --lsm auto where it cannot judge, lets the\n"
      "container go with one line on stderr.\n"
      "Example (config.json): {\"path\": \"/usr/bin/gdrproxy\", \"args\": [\"gdrproxy\", "
      "\"hook\",\n"
      "\"judge\", \"--ctl-socket\", \"/run/gdrproxy/agent.ctl\"]}");
  jd->add_option("--ctl-socket", a->ctl_socket, "The agent's control socket")
      ->capture_default_str();
  auto run = [a, &exit_code](int (*fn)(const HookArgs&), const char* name) {
    exit_code = run_guarded(std::string("gdrproxy hook ") + name, 1, [&] { return fn(*a); });
  };
  create->callback([run] { run(create_runtime, "create-runtime"); });
  post->callback([run] { run(poststop, "poststop"); });
  sw->callback([run] { run(sweep, "sweep"); });
  jd->callback([run] { run(judge, "judge"); });
}

}  // namespace gdrproxy::proxy
