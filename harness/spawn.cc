// See spawn.h.
#include "harness/spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "base/unique_fd.h"
#include "harness/output.h"

extern char** environ;

namespace gdrproxy::harness {
namespace {

// Reads both pipes to their end (stdout into `out`, stderr into `err`), then reaps.
int run(const Spawn& s, std::string* out, std::string* err) {
  int opipe[2] = {-1, -1}, epipe[2] = {-1, -1};
  const bool want_out = out != nullptr || s.output == ChildOutput::kLog;
  const bool want_err = err != nullptr || s.output == ChildOutput::kLog;
  if (want_out && ::pipe2(opipe, O_CLOEXEC) != 0) return 127;
  if (want_err && ::pipe2(epipe, O_CLOEXEC) != 0) return 127;
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  for (const auto& name : s.env_remove)
    std::erase_if(env, [&](const std::string& x) { return x.rfind(name + "=", 0) == 0; });
  for (const auto& kv : s.env_add) {
    const std::string name = kv.substr(0, kv.find('=') + 1);
    std::erase_if(env, [&](const std::string& x) { return x.rfind(name, 0) == 0; });
    env.push_back(kv);
  }
  std::vector<char*> argv, envp;
  for (const auto& a : s.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  UniqueFd ns;
  if (!s.netns.empty()) {
    ns = UniqueFd(::open(s.netns.c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns) return 127;
  }
  const pid_t pid = ::fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    sigset_t none;  // a run blocks the signals it forwards; its children get them
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    if (want_out)
      ::dup2(opipe[1], 1);
    else if (s.output == ChildOutput::kDiscard)
      ::dup2(null, 1);
    if (want_err)
      ::dup2(epipe[1], 2);
    else if (s.output == ChildOutput::kDiscard)
      ::dup2(null, 2);
    if (ns && ::setns(ns.get(), CLONE_NEWNET) != 0) ::_exit(127);
    ::execvpe(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  if (want_out) ::close(opipe[1]);
  if (want_err) ::close(epipe[1]);
  std::string o, e;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(s.timeout_s);
  bool killed = false;
  for (;;) {
    pollfd p[2];
    nfds_t n = 0;
    if (want_out && opipe[0] >= 0) p[n++] = {opipe[0], POLLIN, 0};
    if (want_err && epipe[0] >= 0) p[n++] = {epipe[0], POLLIN, 0};
    if (n == 0) break;
    const int r = ::poll(p, n, 200);
    if (r < 0 && errno != EINTR) break;
    for (nfds_t i = 0; i < n; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      const ssize_t got = ::read(p[i].fd, buf, sizeof buf);
      if (got > 0) {
        (p[i].fd == opipe[0] ? o : e).append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        ::close(p[i].fd);
        (p[i].fd == opipe[0] ? opipe[0] : epipe[0]) = -1;
      }
    }
    if (s.timeout_s > 0 && !killed && std::chrono::steady_clock::now() >= until) {
      ::kill(pid, SIGKILL);
      killed = true;
    }
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (out)
    *out = o;
  else if (s.output == ChildOutput::kLog)
    log() << o;
  if (err)
    *err = e;
  else if (s.output == ChildOutput::kLog)
    log() << e;
  log().flush();
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 127;
}

}  // namespace

int run_program(const Spawn& s) {
  return run(s, nullptr, nullptr);
}

int run_capturing(const Spawn& s, std::string& out, std::string* err) {
  return run(s, &out, err);
}

}  // namespace gdrproxy::harness
