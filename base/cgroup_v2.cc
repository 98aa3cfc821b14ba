#include "base/cgroup_v2.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/unique_fd.h"

namespace gdrproxy {
namespace {

// Where this process's mount namespace has the cgroup2 hierarchy (hybrid hosts: often
// /sys/fs/cgroup/unified); "" when nowhere.
std::string cgroup2_mount() {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // "36 25 0:30 / /sys/fs/cgroup rw,... shared:9 - cgroup2 cgroup2 rw"
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string fstype;
    tail >> fstype;
    if (fstype != "cgroup2") continue;
    std::istringstream head(line.substr(0, dash));
    std::string id, parent, devno, root, point;
    head >> id >> parent >> devno >> root >> point;
    if (root == "/") return point;  // the hierarchy's root, not a bind of a part of it
  }
  return "";
}

}  // namespace

UniqueFd cgroup2_root() {
  const std::string mount = cgroup2_mount();
  return UniqueFd(mount.empty() ? -1 : ::open(mount.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

bool cgroup_v2_exists(int root, uint64_t id) {
  if (root < 0) return true;
  // The kernel's file handle of a kernfs node (FILEID_KERNFS) is its 64-bit id.
  alignas(file_handle) unsigned char bytes[sizeof(file_handle) + sizeof id]{};
  auto* handle = reinterpret_cast<file_handle*>(bytes);
  handle->handle_bytes = sizeof id;
  handle->handle_type = 0xfe;
  std::memcpy(handle->f_handle, &id, sizeof id);
  const UniqueFd dir(::open_by_handle_at(root, handle, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  return dir || errno != ESTALE;
}

std::optional<CgroupV2> cgroup_v2(const std::string& path, std::string& why) {
  if (path.empty() || path[0] != '/' || path.find("/..") != std::string::npos) {
    why = "no cgroup v2 path (\"" + path + "\")";
    return std::nullopt;
  }
  const std::string mount = cgroup2_mount();
  if (mount.empty()) {
    why = "no cgroup2 hierarchy is mounted here";
    return std::nullopt;
  }
  struct stat st {};
  if (::stat((mount + path).c_str(), &st) != 0) {
    why = "cgroup " + mount + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  if (!S_ISDIR(st.st_mode)) {
    why = "cgroup " + mount + path + ": not a directory";
    return std::nullopt;
  }
  CgroupV2 c;
  c.id = st.st_ino;
  for (size_t i = 1; i < path.size(); ++i)
    if (path[i] == '/' && path[i - 1] != '/') ++c.level;
  if (path.size() > 1 && path.back() != '/') ++c.level;
  return c;
}

bool cgroup_at_or_below(const std::string& path, const std::string& root) {
  return path == root || path.rfind(root + "/", 0) == 0;
}

}  // namespace gdrproxy
