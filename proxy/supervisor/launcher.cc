#include "proxy/supervisor/launcher.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "proxy/sandbox/landlock_guard.h"
#include "proxy/supervisor/fd_passing.h"

namespace gdrproxy::proxy {
namespace {

[[noreturn]] void child_fail(int sock, const std::string& msg) {
  (void)!::write(sock, msg.data(), msg.size());
  ::_exit(126);
}

}  // namespace

Launched launch_sandboxed(const LaunchSpec& spec, const DeviceCatalog& catalog,
                          const Grants& grants) {
  if (spec.argv.empty()) throw std::runtime_error("no command given");
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(sv[0]);
    // A sandbox whose supervisor is gone must not keep running: its device calls would fail.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
      child_fail(sv[1], std::string("no_new_privs: ") + std::strerror(errno));
    if (spec.landlock) {
      std::string why;
      if (!apply_device_guard(catalog, grants, why))
        child_fail(sv[1], "Landlock device guard: " + why);
    }
    int nfd;
    try {
      nfd = install_notify_filter(spec.filter);
    } catch (const std::exception& e) {
      child_fail(sv[1], e.what());
    }
    if (!send_fd(sv[1], nfd)) child_fail(sv[1], "cannot pass the listener fd");
    ::close(nfd);
    char go;
    if (::read(sv[1], &go, 1) != 1) ::_exit(126);
    ::close(sv[1]);
    std::vector<char*> argv;
    for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    const int err = errno;
    ::dprintf(2, "gdrproxy: cannot execute %s: %s\n", argv[0], std::strerror(err));
    ::_exit(err == ENOENT ? 127 : 126);
  }
  ::close(sv[1]);
  std::string error;
  const int nfd = recv_fd(sv[0], error);
  if (nfd < 0) {
    ::close(sv[0]);
    int st;
    ::waitpid(pid, &st, 0);
    throw std::runtime_error("sandbox setup failed: " + (error == "peer closed the socket"
                                                             ? "child exited during setup"
                                                             : error));
  }
  return Launched{pid, nfd, sv[0]};
}

}  // namespace gdrproxy::proxy
