// The demo's one way to run a command (see spawn.h).
#include "demo/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>

#include "base/unique_fd.h"
#include "demo/standin_devices.h"

namespace gdrproxy::demo {
namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

// In the forked child: becomes `args`, or exits saying why. No destructor runs here.
[[noreturn]] void become(const std::vector<std::string>& args, const SpawnOptions& options,
                         int output_fd) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (options.limit_s > 0) ::alarm(options.limit_s);
  if (output_fd >= 0) {
    ::dup2(output_fd, 1);
    ::dup2(output_fd, 2);
  }
  if (options.standin) {
    try {
      enter_standin_dev();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "demo: %s\n", e.what());
      ::_exit(125);
    }
  }
  std::vector<char*> a;
  for (const auto& s : args) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  ::execv(a[0], a.data());
  std::fprintf(stderr, "demo: exec %s: %s\n", a[0], std::strerror(errno));
  ::_exit(127);
}

int wait_for(pid_t pid) {
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0) {
    if (errno != EINTR) return 127;
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// Echoes each line read from `fd` and hands it to `after_line`.
void pump_lines(int fd, const std::function<void(const std::string&)>& after_line) {
  std::string pending;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, n);
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      const std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      std::cout << line << "\n";
      after_line(line);
    }
  }
  if (!pending.empty()) {
    std::cout << pending << "\n";
    after_line(pending);
  }
  std::cout.flush();
}

}  // namespace

int run_and_wait(const std::vector<std::string>& args, const SpawnOptions& options) {
  UniqueFd read_end, write_end;
  if (options.after_line) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) {
      std::cout << "demo: pipe: " << std::strerror(errno) << "\n";
      return 127;
    }
    read_end.reset(p[0]);
    write_end.reset(p[1]);
  }
  std::cout.flush();
  std::fflush(stdout);
  const pid_t pid = ::fork();
  if (pid == 0) become(args, options, write_end ? write_end.get() : -1);
  if (pid < 0) {
    std::cout << "demo: fork: " << std::strerror(errno) << "\n";
    return 127;
  }
  write_end.reset();
  if (read_end) pump_lines(read_end.get(), options.after_line);
  return wait_for(pid);
}

int run_shown(const std::vector<std::string>& args, const SpawnOptions& options) {
  std::cout << "$ " << join(args) << "\n";
  return run_and_wait(args, options);
}

}  // namespace gdrproxy::demo
