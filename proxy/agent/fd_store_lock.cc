// One agent per fd store (fd_store_lock.h): POSIX record locks on the bytes of PATH.lock.
#include "proxy/agent/fd_store_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "base/error.h"
#include "base/process_info.h"

namespace gdrproxy::proxy {

UniqueFd lock_fd_store(const std::string& path) {
  constexpr off_t kBytes = 64;  // killed agents stuck at once, at most
  const std::string file = path + ".lock";
  UniqueFd fd(::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) throw_errno("cannot open the fd store's lock " + file, errno);
  const auto byte = [](off_t at) {  // a write lock on that byte
    struct flock l {};
    l.l_type = F_WRLCK;
    l.l_whence = SEEK_SET;
    l.l_start = at;
    l.l_len = 1;
    return l;
  };
  // The live agent holding a byte from `at` on, 0 if none does (killed ones are stepped over;
  // one that looks alive is given a second to finish exiting).
  const auto live_holder = [&](off_t at) -> pid_t {
    for (; at < kBytes; ++at) {
      for (int tries = 0;; ++tries) {
        struct flock q = byte(at);
        if (::fcntl(fd.get(), F_GETLK, &q) != 0 || q.l_type == F_UNLCK) break;
        if (killed_but_not_gone(q.l_pid)) break;
        if (tries == 10) return q.l_pid;
        ::usleep(100 * 1000);
      }
    }
    return 0;
  };
  const auto refuse = [&](pid_t other) {
    return Error("the fd store " + path + " is used by another agent (pid " +
                 std::to_string(other) +
                 "): one agent per store; stop that one, or give this one another --fd-store");
  };
  for (off_t at = 0; at < kBytes; ++at) {
    struct flock l = byte(at);
    if (::fcntl(fd.get(), F_SETLK, &l) != 0) {
      if (errno != EACCES && errno != EAGAIN) throw_errno("cannot lock " + file, errno);
      if (const pid_t other = live_holder(at); other > 0) throw refuse(other);
      continue;  // that byte is a killed agent's (or was just freed): the next one
    }
    // Ours; a live agent beyond it (one that stepped over a killed agent gone since) wins.
    if (const pid_t other = live_holder(at + 1); other > 0) throw refuse(other);
    return fd;
  }
  throw Error("the fd store " + path + ": " + std::to_string(kBytes) +
              " killed agents cannot finish exiting; their threads are blocked in the kernel");
}

}  // namespace gdrproxy::proxy
