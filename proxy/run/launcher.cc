#include "proxy/run/launcher.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "base/error.h"
#include "base/unique_fd.h"
#include "proxy/engine/fd_passing.h"

namespace gdrproxy::proxy {
namespace {

[[noreturn]] void child_fail(int sock, const std::string& msg) {
  (void)!::write(sock, msg.data(), msg.size());
  ::_exit(126);
}

// The signals gdrproxy forwards to the command (Supervisor::arm_signals), plus SIGCHLD.
sigset_t init_signals() {
  sigset_t s;
  sigemptyset(&s);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT, SIGCHLD})
    sigaddset(&s, sig);
  return s;
}

bool cap_get(__user_cap_data_struct (&d)[2]) {
  __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
  return ::syscall(SYS_capget, &h, d) == 0;
}

// Drops dropped_capabilities() from the bounding, ambient, inheritable, permitted and effective
// sets. The bounding set is what a root command gets back at exec; without CAP_SETPCAP (an
// unprivileged supervisor) it cannot be lowered, and need not be: no_new_privs already stops
// execve from granting capabilities.
bool drop_capabilities(std::string& why) {
  __user_cap_data_struct d[2] = {};
  if (!cap_get(d)) {
    why = std::string("capget: ") + std::strerror(errno);
    return false;
  }
  const bool setpcap = d[0].effective & (1u << CAP_SETPCAP);
  for (int cap : dropped_capabilities()) {
    if (setpcap && ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) {
      why = "PR_CAPBSET_DROP " + std::to_string(cap) + ": " + std::strerror(errno);
      return false;
    }
    ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, cap, 0, 0);  // EINVAL: unknown to the kernel
    const uint32_t bit = 1u << (cap % 32);
    d[cap / 32].effective &= ~bit;
    d[cap / 32].permitted &= ~bit;
    d[cap / 32].inheritable &= ~bit;
  }
  __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
  if (::syscall(SYS_capset, &h, d) != 0) {
    why = std::string("capset: ") + std::strerror(errno);
    return false;
  }
  return true;
}

// pid 1 of the sandbox's namespace: relays forwarded signals to the command, reaps every
// process re-parented to it, and once none is left exits with the command's status (128+signal
// when it was killed), which is what the supervisor reports.
[[noreturn]] void run_init(char* const argv[]) {
  const sigset_t relay = init_signals();
  const pid_t cmd = ::fork();
  if (cmd < 0) ::_exit(126);
  if (cmd == 0) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execvp(argv[0], argv);
    const int err = errno;
    ::dprintf(2, "gdrproxy: cannot execute %s: %s\n", argv[0], std::strerror(err));
    ::_exit(err == ENOENT ? 127 : 126);
  }
  // Not ptrace-able by the sandbox's own processes (they share its uid).
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  int status = 0;
  bool cmd_done = false;
  for (;;) {
    siginfo_t si;
    const int sig = ::sigwaitinfo(&relay, &si);
    if (sig < 0) continue;
    if (sig != SIGCHLD) {
      if (!cmd_done) ::kill(cmd, sig);
      continue;
    }
    for (;;) {
      int st;
      const pid_t p = ::waitpid(-1, &st, WNOHANG);
      if (p < 0 && errno == EINTR) continue;
      if (p < 0) ::_exit(status);  // ECHILD: the namespace is empty but for us
      if (p == 0) break;
      if (p == cmd) {
        cmd_done = true;
        status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      }
    }
  }
}

// In the new mount namespace of pid 1: a /proc of the sandbox's pid namespace, so that the
// numbers its processes see (getpid, $$) name them in /proc. Mounts stay ours (slave of the
// parent's, never propagated back).
bool mount_own_proc(std::string& why) {
  if (::unshare(CLONE_NEWNS) != 0) {
    why = std::string("unshare(CLONE_NEWNS): ") + std::strerror(errno);
    return false;
  }
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) {
    why = std::string("make / a slave mount: ") + std::strerror(errno);
    return false;
  }
  if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    why = std::string("mount proc: ") + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

bool can_bind_lifetime() {
  __user_cap_data_struct d[2] = {};
  return cap_get(d) && (d[0].effective & (1u << CAP_SYS_ADMIN));
}

const std::vector<int>& dropped_capabilities() {
  static const std::vector<int> kDropped = {
      CAP_MKNOD,
      CAP_SYS_RAWIO,
      CAP_SYS_ADMIN,
      CAP_SYS_PTRACE,
      CAP_SYS_MODULE,
      CAP_SYS_BOOT,
      CAP_SYS_TIME,
      CAP_DAC_READ_SEARCH,
      CAP_NET_ADMIN,
      CAP_MAC_ADMIN,
      CAP_MAC_OVERRIDE,
      CAP_SYSLOG,
      CAP_AUDIT_CONTROL,
      CAP_LINUX_IMMUTABLE,
      CAP_SYS_PACCT,
      CAP_SYS_TTY_CONFIG,
      CAP_WAKE_ALARM,
      CAP_BLOCK_SUSPEND,
      CAP_PERFMON,
      CAP_BPF,
      CAP_CHECKPOINT_RESTORE,
  };
  return kDropped;
}

Launched launch_sandboxed(const LaunchSpec& spec, const DeviceCatalog& catalog,
                          const Grants& grants) {
  if (spec.argv.empty()) throw Error("no command given");
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    throw_errno("socketpair", errno);
  UniqueFd parent_end(sv[0]), child_end(sv[1]);
  // The next child of this process becomes pid 1 of a new namespace; later ones (there are
  // none today) go back to ours.
  UniqueFd own_pidns;
  if (spec.pid_namespace) {
    own_pidns.reset(::open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC));
    if (!own_pidns || ::unshare(CLONE_NEWPID) != 0)
      throw_errno("cannot give the sandbox a pid namespace", errno);
  }
  const pid_t pid = ::fork();
  if (own_pidns && pid != 0) {
    ::setns(own_pidns.get(), CLONE_NEWPID);
    own_pidns.reset();
  }
  if (pid < 0) throw_errno("fork", errno);
  if (pid == 0) {
    parent_end.reset();
    // A sandbox whose supervisor is gone must not keep running: its device calls would fail.
    // As pid 1 of its namespace, its death takes every other sandboxed process with it. If the
    // supervisor is already gone, the read of the go byte below sees the socket closed.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    sigset_t mask;
    sigemptyset(&mask);
    // pid 1 keeps the signals it relays blocked from the start: unblocked and without a
    // handler, the kernel would drop them.
    if (spec.pid_namespace) mask = init_signals();
    ::sigprocmask(SIG_SETMASK, &mask, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    std::string why;
    if (spec.pid_namespace && !mount_own_proc(why) && !spec.quiet)
      ::dprintf(2, "gdrproxy: sandbox keeps the host's /proc (%s)\n", why.c_str());
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
      child_fail(child_end.get(), std::string("no_new_privs: ") + std::strerror(errno));
    if (!spec.keep_caps && !drop_capabilities(why))
      child_fail(child_end.get(), "dropping capabilities: " + why);
    if (spec.landlock.abi >= 1 && !apply_device_guard(catalog, grants, spec.landlock, why))
      child_fail(child_end.get(), "Landlock device guard: " + why);
    UniqueFd nfd;
    try {
      nfd.reset(install_notify_filter(spec.filter));
    } catch (const std::exception& e) {
      child_fail(child_end.get(), e.what());
    }
    if (!send_fd(child_end.get(), nfd.get()))
      child_fail(child_end.get(), "cannot pass the listener fd");
    nfd.reset();
    char go;
    if (::read(child_end.get(), &go, 1) != 1) ::_exit(126);
    child_end.reset();
    std::vector<char*> argv;
    for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (spec.pid_namespace) run_init(argv.data());
    ::execvp(argv[0], argv.data());
    const int err = errno;
    ::dprintf(2, "gdrproxy: cannot execute %s: %s\n", argv[0], std::strerror(err));
    ::_exit(err == ENOENT ? 127 : 126);
  }
  child_end.reset();
  std::string error;
  const int nfd = recv_fd(parent_end.get(), error);
  if (nfd < 0) {
    parent_end.reset();
    int st;
    ::waitpid(pid, &st, 0);
    throw Error("sandbox setup failed: " +
                (error == "peer closed the socket" ? "child exited during setup" : error));
  }
  return Launched{pid, nfd, parent_end.release()};
}

}  // namespace gdrproxy::proxy
