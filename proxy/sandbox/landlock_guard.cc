// Landlock rules are an allowlist: every handled access is denied unless a rule on the file itself
// or on one of its ancestor directories grants it. So:
//   - beneath every top-level entry except /dev: read, write, reparent (REFER), never ioctl;
//   - in /dev, entry by entry: every directory whose subtree holds no catalogued node gets a rule
//     beneath it, a directory holding one is entered instead, guarded directories never;
//     every device file outside the catalog also gets IOCTL_DEV (ttys, /dev/null, /dev/fuse...),
//     and devpts gets it beneath (ptys appear after launch);
//   - granted uverbs/rdma_cm nodes: read, write and IOCTL_DEV; granted nvidia-caps: read.
// MAKE_CHAR and MAKE_BLOCK are handled and granted nowhere: with them handled, link() and
// rename() of a device node need MAKE_* on the target directory, so a node cannot be made, nor
// moved from a guarded directory into a ruled one. IOCTL_DEV is granted beneath no directory a
// tenant can write to, so a node that reaches such a place anyway (bind-mounted there before
// launch) is readable at most, never ioctl-able; the real device classes have no read().
#include "proxy/sandbox/landlock_guard.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "base/unique_fd.h"

// Newer than the uapi headers of some build hosts (Debian 12 ships 6.1's).
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

namespace gdrproxy::proxy {
namespace {

namespace fs = std::filesystem;

// landlock_ruleset_attr as of ABI 6; older kernels accept it while the fields they lack are 0.
struct RulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;
  uint64_t scoped = 0;
};

// Rights a rule on a non-directory may carry (the kernel refuses the others with EINVAL).
constexpr uint64_t kFileRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
                                 LANDLOCK_ACCESS_FS_IOCTL_DEV;

// The subtree scan below /dev stops at this depth (/dev/bus/usb/001/002 is at 4).
constexpr int kMaxDevDepth = 5;

// Host devices no sandbox gets, whatever it is granted: /dev/userfaultfd would let it stall the
// supervisor's reads of its memory; the others are raw memory and I/O ports.
constexpr const char* kNeverGranted[] = {"/dev/userfaultfd", "/dev/mem", "/dev/kmem", "/dev/port"};

class RuleWriter {
 public:
  RuleWriter(int ruleset, const DeviceCatalog& catalog, const LandlockLevel& level)
      : ruleset_(ruleset), catalog_(catalog) {
    ioctl_ = level.device_ioctls ? LANDLOCK_ACCESS_FS_IOCTL_DEV : 0;
    dir_allow_ = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                 (level.reparenting ? LANDLOCK_ACCESS_FS_REFER : 0);
    for (const char* p : kNeverGranted) {
      struct stat st;
      if (::stat(p, &st) == 0 && S_ISCHR(st.st_mode)) never_.push_back(st.st_rdev);
    }
  }

  uint64_t dir_allow() const { return dir_allow_; }
  uint64_t file_allow() const {
    return LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE;
  }
  uint64_t ioctl() const { return ioctl_; }

  // Adds a rule for `p` (following a final symlink only when `follow`). A path that vanished or
  // cannot be opened needs no rule: nothing is allowed there.
  bool add(const fs::path& p, uint64_t access, bool follow, std::string& why) {
    const UniqueFd f(::open(p.c_str(), O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW)));
    if (!f) return true;
    struct stat st;
    if (::fstat(f.get(), &st) != 0) return true;
    if (!S_ISDIR(st.st_mode)) access &= kFileRights;
    if (S_ISLNK(st.st_mode) || access == 0) return true;
    landlock_path_beneath_attr attr{};
    attr.allowed_access = access;
    attr.parent_fd = f.get();
    if (::syscall(SYS_landlock_add_rule, ruleset_, LANDLOCK_RULE_PATH_BENEATH, &attr, 0) == 0)
      return true;
    // Files of internal filesystems (pipes, sockets) cannot carry rules and need none.
    if (errno == EBADFD) return true;
    why = "landlock_add_rule " + p.string() + ": " + std::strerror(errno);
    return false;
  }

  // A node the sandbox must not reach through any ruled directory.
  bool forbidden(const struct stat& st) const {
    if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)) return false;
    if (S_ISCHR(st.st_mode) && catalog_.find(st.st_rdev)) return true;
    return S_ISCHR(st.st_mode) &&
           std::find(never_.begin(), never_.end(), st.st_rdev) != never_.end();
  }

  bool guarded(const fs::path& p) const {
    const auto& g = catalog_.guarded_dirs();
    return std::find(g.begin(), g.end(), p.string()) != g.end();
  }

  // Rules for the entries of a /dev directory that holds forbidden nodes (or is /dev itself).
  bool allow_entries(const fs::path& dir, int depth, std::string& why) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const fs::path& p = e.path();
      struct stat st;
      // Symlinks (/dev/fd, /dev/stdin, ...) point elsewhere; their targets are covered there.
      if (::lstat(p.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) continue;
      if (S_ISDIR(st.st_mode)) {
        if (guarded(p)) continue;
        if (!allow_dir(p, depth + 1, why)) return false;
      } else if (!forbidden(st)) {
        const bool device = S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode);
        if (!add(p, file_allow() | (device ? ioctl_ : 0), false, why)) return false;
      }
    }
    return true;
  }

 private:
  // A directory below /dev: one rule beneath it when its subtree is clean (plus IOCTL_DEV on each
  // device file in it), else rules entry by entry.
  bool allow_dir(const fs::path& dir, int depth, std::string& why) {
    struct statfs sfs;
    if (::statfs(dir.c_str(), &sfs) == 0 && sfs.f_type == DEVPTS_SUPER_MAGIC)
      return add(dir, dir_allow_ | ioctl_, false, why);  // ptys only, created after launch too
    std::vector<fs::path> devices;
    if (!scan(dir, depth, devices)) return allow_entries(dir, depth, why);
    if (!add(dir, dir_allow_, false, why)) return false;
    if (ioctl_)
      for (const auto& d : devices)
        if (!add(d, ioctl_, false, why)) return false;
    return true;
  }

  // Collects the device files of a subtree; false when it holds a forbidden node.
  bool scan(const fs::path& dir, int depth, std::vector<fs::path>& devices) const {
    if (depth > kMaxDevDepth) return true;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      struct stat st;
      if (::lstat(e.path().c_str(), &st) != 0 || S_ISLNK(st.st_mode)) continue;
      if (S_ISDIR(st.st_mode)) {
        if (guarded(e.path()) || !scan(e.path(), depth + 1, devices)) return false;
      } else if (forbidden(st)) {
        return false;
      } else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
        devices.push_back(e.path());
      }
    }
    return true;
  }

  int ruleset_;
  const DeviceCatalog& catalog_;
  uint64_t ioctl_ = 0;
  uint64_t dir_allow_ = 0;
  std::vector<dev_t> never_;
};

}  // namespace

int landlock_abi_version() {
  long v = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return v < 0 ? 0 : static_cast<int>(v);
}

LandlockLevel landlock_level(std::optional<int> abi_max) {
  LandlockLevel l;
  l.abi = landlock_abi_version();
  if (abi_max && *abi_max >= 0 && *abi_max < l.abi) l.abi = *abi_max;
  l.reparenting = l.abi >= 2;
  l.device_ioctls = l.abi >= 5;
  l.signal_scope = l.abi >= 6;
  return l;
}

std::string landlock_shortfall(const LandlockLevel& l) {
  if (l.complete()) return "";
  std::string s;
  if (l.abi == 0) {
    s = "Landlock unavailable: every open is trapped, io_uring, openat2 and ioctl-only opens "
        "are refused, and a path swapped after the broker's check is not "
        "caught by the kernel";
  } else if (!l.device_ioctls) {
    s = "Landlock ABI " + std::to_string(l.abi) +
        " (< 5) does not check device ioctls: every open is trapped, and io_uring, openat2 "
        "and ioctl-only opens are refused";
  } else {
    s = "Landlock ABI " + std::to_string(l.abi);
  }
  if (!l.signal_scope)
    s += "; no signal scoping (ABI < 6): the sandbox can signal gdrproxy (same uid), which then "
         "stops serving it";
  return s + " (see docs/SECURITY.md)";
}

bool apply_device_guard(const DeviceCatalog& catalog, const Grants& grants,
                        const LandlockLevel& level, std::string& why) {
  if (level.abi < 1) {
    why = "Landlock is not available in this kernel";
    return false;
  }
  RulesetAttr rs;
  rs.handled_access_fs = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                         LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
                         (level.reparenting ? LANDLOCK_ACCESS_FS_REFER : 0) |
                         (level.device_ioctls ? LANDLOCK_ACCESS_FS_IOCTL_DEV : 0);
  rs.scoped = level.signal_scope ? LANDLOCK_SCOPE_SIGNAL : 0;
  const UniqueFd ruleset(
      static_cast<int>(::syscall(SYS_landlock_create_ruleset, &rs, sizeof rs, 0)));
  if (!ruleset) {
    why = std::string("landlock_create_ruleset: ") + std::strerror(errno);
    return false;
  }
  RuleWriter w(ruleset.get(), catalog, level);
  std::error_code ec;
  for (const auto& top : fs::directory_iterator("/", ec)) {
    // /bin -> usr/bin and the like: the rule lands on the target, which is what gets opened.
    if (top.path() != "/dev" && !w.add(top.path(), w.dir_allow(), true, why)) return false;
  }
  if (!w.allow_entries("/dev", 0, why)) return false;
  for (const auto& n : catalog.nodes()) {
    if (!grants.granted(n)) continue;
    // Granted uverbs/rdma_cm nodes are opened by the caller itself (see the open broker).
    if (opened_by_caller(n.device_class) && !w.add(n.path, w.file_allow() | w.ioctl(), true, why))
      return false;
    if (n.device_class == DeviceClass::kNvidiaCaps &&
        !w.add(n.path, LANDLOCK_ACCESS_FS_READ_FILE, true, why))
      return false;
  }
  if (::syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0) {
    why = std::string("landlock_restrict_self: ") + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace gdrproxy::proxy
