#include "proxy/engine/proc_fd_dirs.h"

#include <fcntl.h>

#include <cerrno>
#include <cstdio>

namespace gdrproxy::proxy {

int ProcFdDirs::dir_of(pid_t tid) {
  if (auto it = dirs_.find(tid); it != dirs_.end()) return it->second.get();
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
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool cached = dirs_.count(tid) != 0;
    const int dir = dir_of(tid);
    if (dir < 0) return false;
    if (::statx(dir, name, AT_STATX_DONT_SYNC, STATX_TYPE, &out) == 0) return true;
    // A cached directory of a task that is gone fails: drop it and look once more, in case the
    // tid now names another thread. A fresh directory's failure is the answer.
    if (!cached || errno != ENOENT) return false;
    dirs_.erase(tid);
  }
  return false;
}

}  // namespace gdrproxy::proxy
