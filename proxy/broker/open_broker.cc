#include "proxy/broker/open_broker.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>

#include "base/process_info.h"
#include "base/unique_fd.h"

namespace gdrproxy::proxy {
namespace {

std::string read_link(const std::string& p) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(p.c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// fd, or -errno.
int openat2_path(int dirfd, const std::string& path, uint64_t extra_flags, uint64_t resolve) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC | extra_flags;
  how.resolve = resolve;
  const int fd = static_cast<int>(::syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof how));
  return fd >= 0 ? fd : -errno;
}

// `path` is `dir` itself or lies beneath it (a path-component boundary, not a string prefix:
// /var/lib/c1 does not contain /var/lib/c10/x).
bool beneath(const std::string& path, const std::string& dir) {
  if (dir.empty()) return true;
  return path.compare(0, dir.size(), dir) == 0 &&
         (path.size() == dir.size() || path[dir.size()] == '/');
}

// The caller's own fd table seen through its /proc (/proc/<ns pid>/fd/N): openat2 refuses magic
// links under RESOLVE_IN_ROOT, so such re-opens are resolved through the host's view of the same
// fd. Returns -1 when `path` is not of that form.
int open_own_fd_link(pid_t tid, const std::string& path, uint32_t ns_tgid, uint32_t ns_tid) {
  const auto n = own_fd_link_number(path, ns_tgid, ns_tid);
  if (!n) return -1;
  const std::string host = "/proc/" + std::to_string(tid) + "/fd/" + *n;
  return ::open(host.c_str(), O_PATH | O_CLOEXEC);
}

// Opens (O_PATH) what `path` names for the caller; -errno when it cannot be resolved.
int resolve_for_caller(pid_t tid, int dirfd, std::string path, uint64_t flags,
                       const ProcessIdentity& who) {
  if (int fd = open_own_fd_link(tid, path, who.ns_tgid, who.ns_tid); fd >= 0) return fd;
  if (auto rel = split_magic_dir_path(path, who.ns_tgid, who.ns_tid)) {
    if (rel->dirfd == kMagicRootDir) {
      path = "/" + rel->rest;
    } else {
      dirfd = rel->dirfd;
      path = rel->rest;
    }
  }
  const std::string proc = "/proc/" + std::to_string(tid);
  const uint64_t nofollow = (flags & O_NOFOLLOW) ? O_NOFOLLOW : 0;
  const UniqueFd root(::open((proc + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return -ESRCH;
  if (!path.empty() && path[0] == '/')
    return openat2_path(root.get(), path, nofollow, RESOLVE_IN_ROOT);
  // Relative: express the start directory relative to the caller's root so `..` is clamped at
  // the caller's root, exactly as for the caller.
  const std::string start_link =
      dirfd == AT_FDCWD ? proc + "/cwd" : proc + "/fd/" + std::to_string(dirfd);
  const std::string start = read_link(start_link);
  std::string root_path = read_link(proc + "/root");
  if (root_path == "/") root_path.clear();
  if (!start.empty() && start[0] == '/' && beneath(start, root_path)) {
    return openat2_path(root.get(), start.substr(root_path.size()) + "/" + path, nofollow,
                        RESOLVE_IN_ROOT);
  }
  // The start directory is outside the caller's root (an fd passed in from outside): resolve
  // from it, but never above it.
  const UniqueFd dir(::open(start_link.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return -errno;
  return openat2_path(dir.get(), path, nofollow, RESOLVE_BENEATH);
}

}  // namespace

std::optional<MagicDirPath> split_magic_dir_path(const std::string& path, uint32_t ns_tgid,
                                                 uint32_t ns_tid) {
  // The caller's own thread directory (/proc/thread-self) shares its cwd, root and fd table.
  const std::string process = "/proc/" + std::to_string(ns_tgid) + "/";
  const std::string thread = process + "task/" + std::to_string(ns_tid) + "/";
  std::string tail;
  if (path.compare(0, thread.size(), thread) == 0)
    tail = path.substr(thread.size());
  else if (path.compare(0, process.size(), process) == 0)
    tail = path.substr(process.size());
  else
    return std::nullopt;
  auto after = [&](const std::string& head) -> std::optional<std::string> {
    if (tail.compare(0, head.size(), head) != 0) return std::nullopt;
    if (tail.size() == head.size()) return std::string(".");
    if (tail[head.size()] != '/') return std::nullopt;
    return tail.substr(head.size() + 1);
  };
  if (auto rest = after("cwd")) return MagicDirPath{AT_FDCWD, *rest};
  if (auto rest = after("root")) return MagicDirPath{kMagicRootDir, *rest};
  if (tail.compare(0, 3, "fd/") == 0) {
    const size_t slash = tail.find('/', 3);
    if (slash == std::string::npos) return std::nullopt;  // the fd itself: own_fd_link_number
    const std::string n = tail.substr(3, slash - 3);
    // At most 9 digits: std::stoi cannot overflow (999999999 < INT_MAX), so it never throws.
    if (n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    return MagicDirPath{std::stoi(n), tail.substr(slash + 1)};
  }
  return std::nullopt;
}

std::optional<std::string> own_fd_link_number(const std::string& path, uint32_t ns_tgid,
                                              uint32_t ns_tid) {
  const std::string process = "/proc/" + std::to_string(ns_tgid) + "/";
  const std::string thread = process + "task/" + std::to_string(ns_tid) + "/fd/";
  std::string n;
  if (path.compare(0, thread.size(), thread) == 0)
    n = path.substr(thread.size());
  else if (path.compare(0, process.size() + 3, process + "fd/") == 0)
    n = path.substr(process.size() + 3);
  else
    return std::nullopt;
  if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return n;
}

std::string rewrite_self_paths(const std::string& path, uint32_t ns_tgid, uint32_t ns_tid) {
  const std::string pid = std::to_string(ns_tgid);
  const std::string tid = std::to_string(ns_tid);
  struct Prefix {
    const char* from;
    std::string to;
  };
  const Prefix prefixes[] = {
      {"/proc/self/", "/proc/" + pid + "/"},
      {"/proc/thread-self/", "/proc/" + pid + "/task/" + tid + "/"},
      {"/dev/fd/", "/proc/" + pid + "/fd/"},
  };
  for (const auto& p : prefixes) {
    const size_t n = std::strlen(p.from);
    if (path.compare(0, n, p.from) == 0) return p.to + path.substr(n);
  }
  if (path == "/dev/stdin") return "/proc/" + pid + "/fd/0";
  if (path == "/dev/stdout") return "/proc/" + pid + "/fd/1";
  if (path == "/dev/stderr") return "/proc/" + pid + "/fd/2";
  return path;
}

bool OpenBroker::read_call(pid_t tid, int nr, const uint64_t args[6], OpenCall& out,
                           const ProcessMemory& mem) {
  out.tid = tid;
  out.syscall_nr = nr;
  switch (nr) {
    case SYS_open:
      out.path_addr = args[0];
      out.flags = args[1];
      return true;
    case SYS_creat:
      out.path_addr = args[0];
      out.flags = O_CREAT | O_WRONLY | O_TRUNC;
      return true;
    case SYS_openat:
      out.dirfd = static_cast<int>(args[0]);
      out.path_addr = args[1];
      out.flags = args[2];
      return true;
    case SYS_openat2: {
      out.dirfd = static_cast<int>(args[0]);
      out.path_addr = args[1];
      open_how how{};
      if (args[3] < sizeof(uint64_t)) return false;
      if (!mem.read(args[2], {reinterpret_cast<uint8_t*>(&how), sizeof(uint64_t)})) return false;
      out.flags = how.flags;
      return true;
    }
  }
  return false;
}

OpenDecision OpenBroker::decide(const OpenCall& call, const ProcessMemory& mem) const {
  OpenDecision d;
  auto path = mem.read_string(call.path_addr, PATH_MAX);
  if (!path) {
    // Continuing would let the kernel read the path again, after another thread made it
    // readable: answer what the kernel answers for an unreadable or unterminated path.
    d.kind = OpenDecision::Kind::kUndecidable;
    d.err = EFAULT;
    d.reason = "path unreadable or longer than PATH_MAX";
    return d;
  }
  d.path = *path;
  // An O_PATH fd cannot issue ioctls, and re-opening it is checked. openat2's flags live in
  // the caller's memory and may change after we read them: never trusted to skip the check.
  if ((call.flags & O_PATH) && call.syscall_nr != SYS_openat2) return d;
  // Only paths through /proc or /dev/fd need the caller's own pid numbers.
  ProcessIdentity who;
  if (d.path.rfind("/proc/", 0) == 0 || d.path.rfind("/dev/", 0) == 0)
    who = read_process_identity(call.tid);
  const std::string resolved = rewrite_self_paths(d.path, who.ns_tgid, who.ns_tid);
  const int resolved_fd = resolve_for_caller(call.tid, call.dirfd, resolved, call.flags, who);
  if (resolved_fd < 0) {
    const int err = -resolved_fd;
    // Nothing there: the caller's own open fails too, or creates a regular file (O_CREAT).
    // A node appearing there afterwards is the kernel guard's to refuse (Landlock).
    // EACCES: a directory the supervisor may not search (a FUSE mount without allow_other);
    // a device node reached through it is likewise the kernel guard's to refuse.
    if (err == ENOENT || err == ENOTDIR || err == ENAMETOOLONG || err == EACCES) return d;
    // Anything else (a magic link, a path escaping the root, a loop, a vanished caller) is a
    // path the broker cannot decide: fail closed.
    d.kind = OpenDecision::Kind::kUndecidable;
    d.err = deny_errno_;
    d.reason = std::string("path cannot be resolved as the caller would (") + std::strerror(err) +
               "), failed closed";
    return d;
  }
  const UniqueFd target(resolved_fd);
  struct stat st;
  if (::fstat(target.get(), &st) != 0 || !S_ISCHR(st.st_mode)) return d;
  d.node = catalog_.find(st.st_rdev);
  if (!d.node && later_) d.node = later_->uncatalogued(st.st_rdev);
  if (!d.node) return d;
  if (!grants_.granted(*d.node)) {
    d.kind = OpenDecision::Kind::kDeny;
    d.err = deny_errno_;
    d.reason = ungranted_reason(*d.node);
    return d;
  }
  if (opened_by_caller(d.node->device_class)) {
    d.kind = OpenDecision::Kind::kCallerOpens;
    d.reason = "granted " + d.node->name + ", opened by the caller";
    return d;
  }
  d.kind = OpenDecision::Kind::kBroker;
  const int host_flags = static_cast<int>(call.flags & ~uint64_t(O_CREAT | O_EXCL | O_TRUNC |
                                                                 O_NOFOLLOW | O_DIRECTORY)) |
                         O_CLOEXEC | O_NOCTTY;
  d.host_fd = UniqueFd(::open(d.node->path.c_str(), host_flags));
  if (!d.host_fd) {
    d.err = errno;
    d.reason = "host open of " + d.node->path + " failed: " + std::strerror(errno);
  } else {
    d.reason = "granted " + d.node->name;
  }
  return d;
}

}  // namespace gdrproxy::proxy
