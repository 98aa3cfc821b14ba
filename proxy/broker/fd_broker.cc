// The pidfd_getfd broker's policy and its prober (see fd_broker.h). The prober is a clone of a
// thread of a multithreaded process, sharing its memory: it makes raw system calls only, on data
// the calling thread prepared, and _exits.
#include "proxy/broker/fd_broker.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "base/escape.h"
#include "base/file_io.h"

namespace gdrproxy::proxy {
namespace {

// One line of an id map: ids [inside, inside+count) are [outside, outside+count) here.
struct IdExtent {
  uint64_t inside, outside, count;
};

std::vector<IdExtent> read_id_map(const std::string& path) {
  std::vector<IdExtent> out;
  std::istringstream in(read_text(path).value_or(""));
  IdExtent e{};
  while (in >> e.inside >> e.outside >> e.count) out.push_back(e);
  return out;
}

// `id` (as this process sees it) as the namespace of `map` sees it; nullopt when unmapped.
std::optional<uint32_t> id_inside(const std::vector<IdExtent>& map, uint32_t id) {
  for (const IdExtent& e : map)
    if (id >= e.outside && id - e.outside < e.count)
      return static_cast<uint32_t>(e.inside + (id - e.outside));
  return std::nullopt;
}

bool same_file(int a, int b) {
  struct stat sa {
  }, sb{};
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// What the prober is given: everything prepared before the fork.
struct ProberPlan {
  int userns_fd = -1;  // the caller's user namespace, -1 when it is ours
  uint32_t uid[3] = {0, 0, 0}, gid[3] = {0, 0, 0};
  __user_cap_data_struct caps[2] = {};
  int target_pidfd = -1, target_fd = -1;
  // Written by the prober (it shares this memory and the fd table): where it stopped, the errno
  // there, and the fd taken.
  int stage = -1, err = EPROTO, got = -1;
};

// Where the prober stopped: 0 = the pidfd_getfd itself answered `err`.
enum ProberStage : int { kTaken = 0, kSetns, kSecurebits, kSetresgid, kSetresuid, kCapset };

const char* stage_name(int stage) {
  switch (stage) {
    case kSetns:
      return "setns";
    case kSecurebits:
      return "prctl(PR_SET_SECUREBITS)";
    case kSetresgid:
      return "setresgid";
    case kSetresuid:
      return "setresuid";
    case kCapset:
      return "capset";
    default:
      return "pidfd_getfd";
  }
}

// The prober's body: a clone sharing the supervisor's memory and fd table (CLONE_VM | CLONE_FILES)
// while the calling thread waits (CLONE_VFORK); its credentials are its own. Raw system calls
// only, results into `p`.
int run_prober(void* arg) {
  ProberPlan& p = *static_cast<ProberPlan*>(arg);
  p.stage = kTaken;
  p.err = 0;
  // Nothing of the supervisor's may be read through this task once it has the caller's ids.
  ::syscall(SYS_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0);
  if (p.userns_fd >= 0 && ::syscall(SYS_setns, p.userns_fd, CLONE_NEWUSER) != 0) {
    p.stage = kSetns;
  } else if (::syscall(SYS_prctl, PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP, 0, 0, 0) != 0) {
    // Capabilities are set below, exactly; the uid change must not touch them meanwhile.
    p.stage = kSecurebits;
  } else {
    ::syscall(SYS_setgroups, 0, nullptr);  // not in the ptrace check; refused where "deny"
    if (::syscall(SYS_setresgid, p.gid[0], p.gid[1], p.gid[2]) != 0) {
      p.stage = kSetresgid;
    } else if (::syscall(SYS_setresuid, p.uid[0], p.uid[1], p.uid[2]) != 0) {
      p.stage = kSetresuid;
    } else {
      __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
      if (::syscall(SYS_capset, &hdr, p.caps) != 0) {
        p.stage = kCapset;
      } else {
        p.got = static_cast<int>(::syscall(SYS_pidfd_getfd, p.target_pidfd, p.target_fd, 0));
        if (p.got < 0) p.err = errno;
        ::_exit(0);
      }
    }
  }
  p.err = errno;
  ::_exit(0);
}

std::optional<uint64_t> hex_field(const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long x = std::strtoull(v.c_str(), &end, 16);
  if (errno || end == v.c_str()) return std::nullopt;
  return x;
}

}  // namespace

std::optional<std::string> runtime_helper_reason(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  struct statx sx {};
  if (::statx(AT_FDCWD, (proc + "/exe").c_str(), 0, STATX_MNT_ID, &sx) != 0)
    return "its program cannot be read (" + std::string(std::strerror(errno)) + ")";
  if (!(sx.stx_mask & STATX_MNT_ID)) return "its program's mount cannot be learnt (kernel < 5.8)";
  std::istringstream mounts(read_text(proc + "/mountinfo", kWholeFile).value_or(""));
  for (std::string line; std::getline(mounts, line);)
    if (std::strtoull(line.c_str(), nullptr, 10) == sx.stx_mnt_id) return std::nullopt;
  return "its program " + quote_text(read_link(proc + "/exe").value_or("?")) +
         " is on no mount of its mount namespace: a runtime's helper before exec";
}

std::optional<TaskCredentials> parse_task_credentials(const std::string& status) {
  TaskCredentials c;
  unsigned found = 0;
  std::istringstream in(status);
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, colon);
    std::istringstream v(line.substr(colon + 1));
    if (key == "Uid" || key == "Gid") {
      uint64_t ids[3];
      if (!(v >> ids[0] >> ids[1] >> ids[2])) return std::nullopt;
      for (int i = 0; i < 3; ++i) {
        if (ids[i] > UINT32_MAX) return std::nullopt;
        (key == "Uid" ? c.uid[i] : c.gid[i]) = static_cast<uint32_t>(ids[i]);
      }
      found |= key == "Uid" ? 1u : 2u;
    } else if (key == "CapInh" || key == "CapPrm" || key == "CapEff") {
      std::string hex;
      v >> hex;
      const std::optional<uint64_t> x = hex_field(hex);
      if (!x) return std::nullopt;
      (key == "CapInh" ? c.cap_inh : key == "CapPrm" ? c.cap_prm : c.cap_eff) = *x;
      found |= key == "CapInh" ? 4u : key == "CapPrm" ? 8u : 16u;
    }
  }
  if (found != 31u) return std::nullopt;
  return c;
}

std::optional<TaskCredentials> read_task_credentials(pid_t tid) {
  return parse_task_credentials(read_text("/proc/" + std::to_string(tid) + "/status").value_or(""));
}

TakenFd take_fd_as_caller(pid_t caller_tid, int target_pidfd, int target_fd) {
  TakenFd out;
  auto refuse = [&](int err, std::string why) {
    out.err = err;
    out.why = std::move(why);
    return std::move(out);
  };
  const std::string proc = "/proc/" + std::to_string(caller_tid);
  const std::optional<TaskCredentials> creds = read_task_credentials(caller_tid);
  if (!creds) return refuse(ESRCH, "the caller's credentials cannot be read");
  ProberPlan plan;
  for (int i = 0; i < 3; ++i) {
    plan.uid[i] = creds->uid[i];
    plan.gid[i] = creds->gid[i];
  }
  UniqueFd userns(::open((proc + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC));
  const UniqueFd own(::open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC));
  if (!userns || !own) return refuse(ESRCH, "the caller's user namespace cannot be read");
  if (!same_file(userns.get(), own.get())) {
    plan.userns_fd = userns.get();
    const std::vector<IdExtent> uids = read_id_map(proc + "/uid_map");
    const std::vector<IdExtent> gids = read_id_map(proc + "/gid_map");
    for (int i = 0; i < 3; ++i) {
      const std::optional<uint32_t> u = id_inside(uids, creds->uid[i]);
      const std::optional<uint32_t> g = id_inside(gids, creds->gid[i]);
      if (!u || !g) return refuse(EPERM, "the caller's ids are not mapped in its user namespace");
      plan.uid[i] = *u;
      plan.gid[i] = *g;
    }
  }
  // The caller's capabilities less an effective CAP_SYS_PTRACE: what is decided is what the
  // caller may take without using it. The permitted set stays the caller's, for the kernel
  // compares the target's permitted set with it (a target holding CAP_SYS_PTRACE is taken by a
  // caller of the same set).
  const uint64_t no_ptrace = ~(uint64_t{1} << CAP_SYS_PTRACE);
  const uint64_t eff = creds->cap_eff & no_ptrace, prm = creds->cap_prm, inh = creds->cap_inh;
  plan.caps[0] = {static_cast<uint32_t>(eff), static_cast<uint32_t>(prm),
                  static_cast<uint32_t>(inh)};
  plan.caps[1] = {static_cast<uint32_t>(eff >> 32), static_cast<uint32_t>(prm >> 32),
                  static_cast<uint32_t>(inh >> 32)};
  plan.target_pidfd = target_pidfd;
  plan.target_fd = target_fd;

  // The prober's stack, and the plan it writes its results into, stay the calling thread's.
  std::vector<char> stack(64 * 1024);
  // No signal handler of the supervisor may run in the prober (it shares the memory, and a
  // process of the caller's uid may signal it): it starts with every signal blocked.
  sigset_t all, old;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t child = ::clone(run_prober, stack.data() + stack.size(),
                              CLONE_VM | CLONE_VFORK | CLONE_FILES | SIGCHLD, &plan);
  const int clone_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (child < 0) return refuse(clone_errno, "the prober cannot be started");
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  out.fd = UniqueFd(plan.got);  // in the shared fd table: ours now
  if (plan.stage < 0) {
    out.fd.reset();
    return refuse(EPROTO, "the prober gave no answer");
  }
  if (out.fd && plan.stage == kTaken) return out;
  out.fd.reset();
  const ProberPlan& reply = plan;
  if (reply.stage != kTaken)
    return refuse(EPERM, std::string("the prober cannot take the caller's credentials (") +
                             stage_name(reply.stage) + ": " + std::strerror(reply.err) + ")");
  if (reply.err == EPERM)
    return refuse(EPERM,
                  "the caller's own credentials may not take it (the kernel's ptrace check: other "
                  "ids, a non-dumpable process or more capabilities)");
  return refuse(reply.err, std::string("pidfd_getfd failed: ") + std::strerror(reply.err));
}

}  // namespace gdrproxy::proxy
