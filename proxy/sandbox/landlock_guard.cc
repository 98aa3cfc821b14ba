// Landlock rules are an allowlist: every handled access is denied unless a rule on some ancestor
// directory (or the file itself) grants it. We therefore grant READ_FILE|WRITE_FILE beneath every
// top-level entry except /dev, beneath every /dev entry except the guarded device directories,
// and on every /dev file that is not a catalogued device.
#include "proxy/sandbox/landlock_guard.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace gdrproxy::proxy {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kHandled = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE;

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

bool add_rule(int ruleset, const fs::path& p, uint64_t access = kHandled) {
  Fd f{::open(p.c_str(), O_PATH | O_CLOEXEC)};
  if (f.fd < 0) return true;  // vanished or unreadable: nothing to allow
  landlock_path_beneath_attr attr{};
  attr.allowed_access = access;
  attr.parent_fd = f.fd;
  if (::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &attr, 0) == 0)
    return true;
  // Files of internal filesystems (pipes, sockets) cannot carry rules and need none.
  return errno == EBADFD;
}

}  // namespace

int landlock_abi_version() {
  long v = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return v < 0 ? 0 : static_cast<int>(v);
}

bool apply_device_guard(const DeviceCatalog& catalog, const Grants& grants, std::string& why) {
  if (landlock_abi_version() < 1) {
    why = "Landlock is not available in this kernel";
    return false;
  }
  landlock_ruleset_attr rs{};
  rs.handled_access_fs = kHandled;
  Fd ruleset{static_cast<int>(::syscall(SYS_landlock_create_ruleset, &rs, sizeof rs, 0))};
  if (ruleset.fd < 0) {
    why = std::string("landlock_create_ruleset: ") + std::strerror(errno);
    return false;
  }
  std::error_code ec;
  const auto& guarded = catalog.guarded_dirs();
  for (const auto& top : fs::directory_iterator("/", ec)) {
    if (top.path() != "/dev" && !add_rule(ruleset.fd, top.path())) {
      why = "landlock_add_rule " + top.path().string() + ": " + std::strerror(errno);
      return false;
    }
  }
  for (const auto& e : fs::directory_iterator("/dev", ec)) {
    const auto& p = e.path();
    // Symlinks (/dev/fd, /dev/stdin, ...) point elsewhere; their targets are covered there.
    if (e.is_symlink(ec)) continue;
    if (std::find(guarded.begin(), guarded.end(), p.string()) != guarded.end()) continue;
    struct stat st;
    if (::stat(p.c_str(), &st) == 0 && S_ISCHR(st.st_mode) && catalog.find(st.st_rdev)) continue;
    if (!add_rule(ruleset.fd, p)) {
      why = "landlock_add_rule " + p.string() + ": " + std::strerror(errno);
      return false;
    }
  }
  for (const auto& n : catalog.nodes()) {
    if (n.device_class == DeviceClass::kNvidiaCaps && grants.granted(n) &&
        !add_rule(ruleset.fd, n.path, LANDLOCK_ACCESS_FS_READ_FILE)) {
      why = "landlock_add_rule " + n.path + ": " + std::strerror(errno);
      return false;
    }
  }
  if (::syscall(SYS_landlock_restrict_self, ruleset.fd, 0) != 0) {
    why = std::string("landlock_restrict_self: ") + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace gdrproxy::proxy
