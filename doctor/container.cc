// Container checks (see container.h).
#include "doctor/container.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "base/file_io.h"
#include "base/unique_fd.h"

namespace gdrproxy::doctor {
namespace {

// "pid:[4026531836]" -> 4026531836; 0 when unreadable.
unsigned long ns_inode(const std::string& link_path) {
  auto l = read_link(link_path);
  if (!l) return 0;
  size_t open = l->find('['), close = l->find(']');
  if (open == std::string::npos || close == std::string::npos || close <= open + 1) return 0;
  try {
    return std::stoul(l->substr(open + 1, close - open - 1));
  } catch (const std::exception&) {
    return 0;
  }
}

void check_pid_ns(const Context& ctx, Report& report) {
  const unsigned long self = ns_inode(ctx.proc_root + "/self/ns/pid");
  if (self == 0) {
    report.warn("container.pid_ns", "cannot read " + ctx.proc_root + "/self/ns/pid",
                "mount /proc of this pid namespace");
    return;
  }
  if (self == kInitPidNsInode)
    report.pass("container.pid_ns", "the host's initial pid namespace");
  else
    report.pass("container.pid_ns",
                "pid namespace " + std::to_string(self) +
                    " (not the host's): CUDA IPC with processes outside it needs UCX >= 1.21 "
                    "cuda_ipc or a shared pid namespace");
}

void check_ranks(const Context& ctx, Report& report) {
  if (ctx.pids.size() < 2) return;
  std::map<std::string, std::map<unsigned long, std::vector<int>>> by_kind;
  std::vector<int> unreadable;
  for (int pid : ctx.pids) {
    const std::string dir = ctx.proc_root + "/" + std::to_string(pid) + "/ns/";
    bool ok = true;
    for (const char* kind : {"pid", "net", "ipc"}) {
      const unsigned long ino = ns_inode(dir + kind);
      if (ino == 0) ok = false;
      by_kind[kind][ino].push_back(pid);
    }
    if (!ok) unreadable.push_back(pid);
  }
  if (!unreadable.empty()) {
    std::string s;
    for (int p : unreadable) s += (s.empty() ? "" : ",") + std::to_string(p);
    report.warn("container.ranks", "cannot read the namespaces of pid " + s,
                "run the doctor as root in a pid namespace that sees every rank");
    return;
  }
  auto groups = [](const std::map<unsigned long, std::vector<int>>& m) {
    std::string s;
    for (const auto& [ino, pids] : m) {
      s += (s.empty() ? "" : "; ") + std::to_string(ino) + ":";
      for (int p : pids) s += " " + std::to_string(p);
    }
    return s;
  };
  if (by_kind["net"].size() > 1)
    report.fail("container.ranks_net_ns",
                "ranks in different network namespaces (" + groups(by_kind["net"]) +
                    "): NCCL's cuMem handles travel over abstract sockets, which are per "
                    "network namespace",
                "run one node's ranks in one network namespace, or NCCL >= 2.29.2 with "
                "NCCL_IPC_USE_ABSTRACT_SOCKET=0 and a shared /tmp");
  else
    report.pass("container.ranks_net_ns", "every rank in one network namespace");
  if (by_kind["pid"].size() > 1)
    report.warn("container.ranks_pid_ns",
                "ranks in different pid namespaces (" + groups(by_kind["pid"]) + ")",
                "share the pid namespace between a node's containers, or use UCX >= 1.21 "
                "(pid namespace in cuda_ipc rkeys); pidfd_getfd cannot reach across them");
  else
    report.pass("container.ranks_pid_ns", "every rank in one pid namespace");
}

// The boot id a process sees: its own root's /proc (a container may bind-mount a fake one over
// /proc/sys/kernel/random/boot_id), else the doctor's /proc.
struct BootId {
  std::string value;
  std::string source;
};
BootId boot_id_of(const Context& ctx, int pid) {
  const std::string rel = "/proc/sys/kernel/random/boot_id";
  const std::string own = ctx.proc_root + "/" + std::to_string(pid) + "/root" + rel;
  if (auto b = read_text(own); b && !trim(*b).empty()) return {trim(*b), "its root"};
  if (auto b = read_text(ctx.proc_root + "/sys/kernel/random/boot_id"))
    return {trim(*b), "the doctor's /proc"};
  return {};
}

// NCCL's host hash is hostname + boot id (src/misc/utils.cc getHostHash; NCCL_HOSTID replaces
// both): ranks of one node that read different boot ids count as different hosts, and NCCL skips
// P2P, SHM and cuMem handle exchange between them.
void check_boot_ids(const Context& ctx, Report& report) {
  if (ctx.pids.empty()) return;
  std::map<std::string, std::vector<int>> by_id;
  std::set<std::string> hostids;
  nlohmann::json facts = nlohmann::json::object();
  std::string shown;
  for (int pid : ctx.pids) {
    const BootId b = boot_id_of(ctx, pid);
    by_id[b.value].push_back(pid);
    facts[std::to_string(pid)] = clean(b.value);
    shown += (shown.empty() ? "" : ", ") + std::to_string(pid) + "=" +
             (b.value.empty() ? std::string("unreadable") : quote_value(b.value)) + " (" +
             b.source + ")";
    const std::string dir = ctx.proc_root + "/" + std::to_string(pid);
    std::string hostid;
    if (auto e = read_file(dir + "/environ"); e.data) {
      auto env = parse_environ(*e.data);
      if (auto it = env.find("NCCL_HOSTID"); it != env.end()) hostid = it->second;
    }
    hostids.insert(hostid);
  }
  report.facts()["ranks_boot_id"] = facts;
  std::string self;
  if (auto b = read_text(ctx.proc_root + "/sys/kernel/random/boot_id")) self = trim(*b);
  if (by_id.count("")) {
    report.warn("container.ranks_boot_id", "cannot read the boot id of every rank: " + shown,
                "run the doctor as root where it sees the ranks' /proc/PID/root");
  } else if (by_id.size() > 1 && hostids.size() == 1 && !hostids.begin()->empty()) {
    report.pass("container.ranks_boot_id",
                "boot ids differ (" + shown + ") but every rank sets NCCL_HOSTID=" +
                    quote_value(*hostids.begin()) + ", which NCCL uses instead");
  } else if (by_id.size() > 1) {
    report.fail("container.ranks_boot_id",
                "ranks see different boot ids: " + shown +
                    ": NCCL hashes hostname + boot id into its host id, so these ranks look like "
                    "different hosts (no P2P, SHM or cuMem handles between them)",
                "do not fake /proc/sys/kernel/random/boot_id in the containers (a bind mount, "
                "LXCFS); give every rank the kernel's own");
  } else if (!self.empty() && by_id.begin()->first != self) {
    report.warn("container.ranks_boot_id",
                "every rank sees boot id " + quote_value(by_id.begin()->first) +
                    ", the kernel says " + quote_value(self) +
                    ": a faked boot id; identical fakes on two nodes make NCCL take them for "
                    "one host",
                "remove the bind mount over /proc/sys/kernel/random/boot_id in the containers");
  } else {
    report.pass("container.ranks_boot_id", "every rank sees this kernel's boot id: " + shown);
  }
}

void check_pidfd(const Context& ctx, Report& report) {
  UniqueFd target(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0)));
  if (!pidfd) {
    const int e = errno;
    report.fail("container.pidfd_open", std::string("pidfd_open(self) failed: ") + std::strerror(e),
                e == ENOSYS ? "kernel >= 5.3 and a seccomp profile that allows pidfd_open"
                            : "allow pidfd_open in the container's seccomp profile");
    return;
  }
  report.pass("container.pidfd_open", "pidfd_open(self) works");
  UniqueFd got(static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(), target.get(), 0)));
  if (!got) {
    const int e = errno;
    report.fail("container.pidfd_getfd",
                std::string("pidfd_getfd(self) failed: ") + std::strerror(e) +
                    " (Docker/containerd profiles allow it only with CAP_SYS_PTRACE; UCX 1.22 "
                    "POSIX-fd cuda_ipc and PyTorch expandable segments need it)",
                "run under gdrproxy with --broker-pidfd-getfd, or allow pidfd_getfd in the "
                "profile");
  } else {
    report.pass("container.pidfd_getfd", "pidfd_getfd(self) works");
  }
  auto yama = read_text(ctx.proc_root + "/sys/kernel/yama/ptrace_scope");
  if (yama) {
    const std::string v = trim(*yama);
    if (v == "0")
      report.pass("container.yama", "Yama ptrace_scope 0: sibling ranks may pidfd_getfd");
    else
      report.warn("container.yama",
                  "Yama ptrace_scope " + quote_value(v) +
                      ": pidfd_getfd between sibling ranks needs CAP_SYS_PTRACE",
                  "gdrproxy run --broker-pidfd-getfd, or kernel.yama.ptrace_scope=0");
  }
}

void host_facts(const Context& ctx, Report& report) {
  nlohmann::json host = nlohmann::json::object();
  utsname u{};
  if (::uname(&u) == 0) {
    host["hostname"] = clean(u.nodename);
    host["kernel"] = clean(u.release);
  }
  if (auto b = read_text(ctx.proc_root + "/sys/kernel/random/boot_id"))
    host["boot_id"] = clean(trim(*b));
  report.facts()["host"] = host;
}

}  // namespace

void check_container(const Context& ctx, Report& report) {
  host_facts(ctx, report);
  check_pid_ns(ctx, report);
  check_ranks(ctx, report);
  check_boot_ids(ctx, report);
  check_pidfd(ctx, report);
}

}  // namespace gdrproxy::doctor
