#include "proxy/engine/seccomp_notify.h"

#include <fcntl.h>

#include <cerrno>

namespace gdrproxy::proxy {

int notif_inject_fd(int nfd, uint64_t id, int srcfd, bool cloexec) {
  seccomp_notif_addfd a{};
  a.id = id;
  a.flags = SECCOMP_ADDFD_FLAG_SEND;
  a.srcfd = static_cast<uint32_t>(srcfd);
  a.newfd_flags = cloexec ? O_CLOEXEC : 0;
  int r = ::ioctl(nfd, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
  if (r >= 0) return r;
  if (errno != EINVAL) return -errno;
  a.flags = 0;
  r = ::ioctl(nfd, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
  if (r < 0) return -errno;
  if (notif_return(nfd, id, r) < 0) return -errno;
  return r;
}

}  // namespace gdrproxy::proxy
