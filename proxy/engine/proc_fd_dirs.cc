#include "proxy/engine/proc_fd_dirs.h"

#include <fcntl.h>

#include <cerrno>
#include <cstdio>

namespace gdrproxy::proxy {

int ProcFdDirs::open_dir(pid_t tid) {
  char path[48];
  std::snprintf(path, sizeof path, "/proc/%d/fd", static_cast<int>(tid));
  UniqueFd dir(::open(path, O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return -1;
  if (dirs_.size() >= kCapacity) dirs_.clear();
  return dirs_.emplace(tid, std::move(dir)).first->second.get();
}

bool ProcFdDirs::stat_fd(pid_t tid, int fd, struct statx& out) {
  char name[16];
  std::snprintf(name, sizeof name, "%d", fd);
  if (auto it = dirs_.find(tid); it != dirs_.end()) {
    if (::statx(it->second.get(), name, AT_STATX_DONT_SYNC, STATX_TYPE, &out) == 0) return true;
    if (errno != ENOENT) return false;
    // The fd is closed, or the task is gone: drop the directory and look once more through a
    // fresh one, in case the tid now names another thread.
    dirs_.erase(it);
  }
  const int dir = open_dir(tid);
  return dir >= 0 && ::statx(dir, name, AT_STATX_DONT_SYNC, STATX_TYPE, &out) == 0;
}

}  // namespace gdrproxy::proxy
