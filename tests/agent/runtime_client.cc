// Plays an OCI runtime towards `gdrproxy agent`, the way runc and crun do it: a child installs a
// seccomp filter with a listener (gdrproxy's own notify filter, as a container's profile would
// carry it), the parent connects to the agent's socket and sends the container process state
// with the listener fd (SCM_RIGHTS on the first of several sendmsg calls), then lets the child
// exec the command, whose device calls the agent now serves. The idea not to miss: this is the
// protocol only; what the command may do is decided by the agent, from its own config.
// Usage: runtime_client SOCKET ID runc-init|runc-exec|crun|crun-exec [--metadata M] [--bundle DIR]
//                       [--pidns] [--trap-pidfd-getfd] [--pause-ms N] -- CMD...
//   --bundle DIR        report DIR as the bundle as it is; without it a bundle is made in $TMPDIR
//                       whose config.json hands the listener to SOCKET with metadata M (as the
//                       user's bundle would), and removed at the end
//   --pidns             the command is pid 1 of a new pid namespace, as in a container
//   --trap-pidfd-getfd  the filter traps pidfd_getfd too (for a brokering agent)
//   --pause-ms N        pause N ms after connecting, and again after the first piece (a kill of
//                       the agent while a runtime's bytes are on their way)
// Exit status: the command's (128+N if killed by signal N); 120 on a setup failure.
#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "proxy/engine/fd_passing.h"
#include "proxy/sandbox/notify_filter.h"

namespace {

int fail(const char* what) {
  std::fprintf(stderr, "runtime_client: %s: %s\n", what, std::strerror(errno));
  return 120;
}

// The state as each runtime writes it: runc with its spec version and "creating" (init) or
// "running" (exec); crun with the hard-coded "0.2.0".
std::string state_json(const std::string& style, const std::string& id, pid_t pid,
                       const std::string& metadata, const std::string& bundle) {
  nlohmann::json j;
  const bool crun = style.rfind("crun", 0) == 0;
  // crun 1.8's exec names no process: "pid": 0 (the agent binds the listener to its first
  // caller), in a running container's state.
  if (style == "crun-exec") pid = 0;
  j["ociVersion"] = crun ? "0.2.0" : "1.2.0";
  j["fds"] = {"seccompFd"};
  j["pid"] = pid;
  if (!metadata.empty()) j["metadata"] = metadata;
  j["state"] = {{"ociVersion", crun ? "0.2.0" : "1.2.0"},
                {"id", id},
                {"status", style == "runc-exec" || style == "crun-exec" ? "running" : "creating"},
                {"pid", pid},
                {"bundle", bundle},
                {"annotations", {{"io.example/tenant-wrote-this", "grants=everything"}}}};
  return j.dump();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string metadata, bundle;
  bool new_pidns = false, trap_pidfd_getfd = false;
  int pause_ms = 0;
  size_t dashdash = 0;
  for (size_t i = 3; i < args.size(); ++i) {
    if (args[i] == "--") {
      dashdash = i;
      break;
    }
    if (args[i] == "--metadata" && i + 1 < args.size()) {
      metadata = args[++i];
    } else if (args[i] == "--bundle" && i + 1 < args.size()) {
      bundle = args[++i];
    } else if (args[i] == "--pidns") {
      new_pidns = true;
    } else if (args[i] == "--trap-pidfd-getfd") {
      trap_pidfd_getfd = true;
    } else if (args[i] == "--pause-ms" && i + 1 < args.size()) {
      pause_ms = std::atoi(args[++i].c_str());
    } else {
      dashdash = 0;
      break;
    }
  }
  if (args.size() < 5 || dashdash < 3 || dashdash + 1 >= args.size()) {
    std::fprintf(
        stderr,
        "usage: runtime_client SOCKET ID runc-init|runc-exec|crun|crun-exec [--metadata M] "
        "[--bundle DIR] [--pidns] [--trap-pidfd-getfd] [--pause-ms N] -- CMD...\n");
    return 2;
  }
  const std::string socket_path = args[0], id = args[1], style = args[2];
  // The user's bundle, as runc is given one: its config.json names the agent's socket.
  std::string made_bundle;
  if (bundle.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/runtime-client-bundle.XXXXXX";
    if (!::mkdtemp(tmpl.data())) return fail("mkdtemp");
    made_bundle = bundle = tmpl;
    nlohmann::json cfg;
    cfg["ociVersion"] = "1.2.0";
    cfg["linux"]["seccomp"] = {{"defaultAction", "SCMP_ACT_ALLOW"},
                               {"listenerPath", socket_path},
                               {"listenerMetadata", metadata}};
    std::ofstream(bundle + "/config.json") << cfg.dump(2) << "\n";
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      if (!dir.empty()) std::filesystem::remove_all(dir);
    }
  } cleanup{made_bundle};
  // The next child is pid 1 of a new pid namespace, as a container's init is.
  if (new_pidns && ::unshare(CLONE_NEWPID) != 0) return fail("unshare(CLONE_NEWPID)");

  int sp[2], go[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0 || ::pipe2(go, O_CLOEXEC) != 0)
    return fail("socketpair");
  const pid_t child = ::fork();
  if (child < 0) return fail("fork");
  if (child == 0) {
    ::close(sp[0]);
    ::close(go[1]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    int listener = -1;
    try {
      // Opens for writing are trapped, as a container profile would (the device cgroup, not
      // the broker, is the containers' kernel guard): read-only opens such as the loader's
      // never reach the agent.
      gdrproxy::proxy::FilterOptions filter;
      filter.trap_pidfd_getfd = trap_pidfd_getfd;
      listener = gdrproxy::proxy::install_notify_filter(filter);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "runtime_client: %s\n", e.what());
      _exit(120);
    }
    if (!gdrproxy::proxy::send_fd(sp[1], listener)) _exit(120);
    ::close(listener);
    char b;
    if (::read(go[0], &b, 1) != 1) _exit(120);
    std::vector<char*> cmd;
    for (size_t i = dashdash + 1; i < args.size(); ++i) cmd.push_back(args[i].data());
    cmd.push_back(nullptr);
    ::execvp(cmd[0], cmd.data());
    _exit(errno == ENOENT ? 127 : 126);
  }
  ::close(sp[1]);
  ::close(go[0]);
  std::string why;
  const int listener = gdrproxy::proxy::recv_fd(sp[0], why);
  if (listener < 0) {
    std::fprintf(stderr, "runtime_client: no listener from the child: %s\n", why.c_str());
    return 120;
  }

  const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path.c_str());
  if (s < 0 || ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return fail("connect to the agent");
  // The message in three pieces, the fd with the first, as the spec allows.
  const std::string msg = state_json(style, id, child, metadata, bundle);
  const size_t third = msg.size() / 3;
  const std::string first = msg.substr(0, third);
  const auto pause = [pause_ms] {
    if (pause_ms > 0) ::usleep(static_cast<useconds_t>(pause_ms) * 1000);
  };
  pause();
  if (!gdrproxy::proxy::send_with_fd(s, first, listener)) return fail("sendmsg");
  pause();
  for (const std::string& part : {msg.substr(third, third), msg.substr(2 * third)})
    if (::write(s, part.data(), part.size()) != static_cast<ssize_t>(part.size()))
      return fail("write");
  ::close(s);
  // Like runc, keep no copy of the listener: only the agent holds it.
  ::close(listener);
  if (::write(go[1], "G", 1) != 1) return fail("start the child");
  int st = 0;
  while (::waitpid(child, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
