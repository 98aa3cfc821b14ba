// Where a trapped call's fd leads, asked of /proc with one statx relative to a cached
// /proc/<tid>/fd directory instead of a walk of the whole path on every call.
//
// The idea not to miss: a directory fd of /proc/<tid>/fd belongs to that task, not to the number.
// Once the task is gone every lookup through it fails (ENOENT), so a tid reused by another
// thread can never be answered from the dead one's table: the failure evicts the entry and the
// lookup is retried once on a freshly opened directory.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <unordered_map>

#include "base/unique_fd.h"

namespace gdrproxy::proxy {

class ProcFdDirs {
 public:
  // At most this many directories are kept; when full the cache starts over (a container's
  // device calls come from a few threads, and every entry holds an fd).
  static constexpr size_t kCapacity = 64;

  // statx of fd `fd` of thread `tid` (type and device number), without asking a FUSE server
  // (AT_STATX_DONT_SYNC). False when the thread or the fd is gone.
  bool stat_fd(pid_t tid, int fd, struct statx& out);

  size_t size() const { return dirs_.size(); }

 private:
  // Opens /proc/<tid>/fd and keeps it; -1 if the task is gone.
  int open_dir(pid_t tid);
  std::unordered_map<pid_t, UniqueFd> dirs_;
};

}  // namespace gdrproxy::proxy
