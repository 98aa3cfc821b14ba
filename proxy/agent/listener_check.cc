// See listener_check.h. Id 0 is asked about: notification ids start at a random 64-bit value, so
// a listener that happens to hold id 0 answers 0, which is as good a proof as ENOENT.
#include "proxy/agent/listener_check.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "proxy/engine/seccomp_notify.h"

namespace gdrproxy::proxy {

bool is_seccomp_listener(int fd, std::string& why) {
  char name[256];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), name, sizeof name - 1);
  if (n < 0) {
    why = "its fd cannot be named (" + std::string(std::strerror(errno)) + ")";
    return false;
  }
  const std::string what(name, static_cast<size_t>(n));
  if (what != "anon_inode:seccomp notify") {
    why = "its fd is " + what + ", not a seccomp listener";
    return false;
  }
  uint64_t id = 0;
  if (::ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) != 0 && errno != ENOENT) {
    why = "its fd answers SECCOMP_IOCTL_NOTIF_ID_VALID with " + std::string(std::strerror(errno)) +
          ", not as a seccomp listener does";
    return false;
  }
  return true;
}

}  // namespace gdrproxy::proxy
