// Thin RAII-free wrappers over the seccomp user-notification ioctls (seccomp_unotify(2)), with the
// constants newer than this distribution's headers.
#pragma once

#include <linux/seccomp.h>
#include <sys/ioctl.h>

#include <cstdint>

#ifndef SECCOMP_ADDFD_FLAG_SEND
#define SECCOMP_ADDFD_FLAG_SEND (1UL << 1)
#endif
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

namespace gdrproxy::proxy {

// The notification is still pending and its caller alive (proves the memory we read was theirs).
inline bool notif_id_valid(int nfd, uint64_t id) {
  return ::ioctl(nfd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

// Lets the syscall run in the caller as if never trapped.
inline int notif_continue(int nfd, uint64_t id) {
  seccomp_notif_resp r{};
  r.id = id;
  r.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  return ::ioctl(nfd, SECCOMP_IOCTL_NOTIF_SEND, &r);
}

// Fails the syscall with -err without running it.
inline int notif_error(int nfd, uint64_t id, int err) {
  seccomp_notif_resp r{};
  r.id = id;
  r.error = -err;
  return ::ioctl(nfd, SECCOMP_IOCTL_NOTIF_SEND, &r);
}

inline int notif_return(int nfd, uint64_t id, int64_t val) {
  seccomp_notif_resp r{};
  r.id = id;
  r.val = val;
  return ::ioctl(nfd, SECCOMP_IOCTL_NOTIF_SEND, &r);
}

// Installs `srcfd` in the caller and completes the syscall with the new fd number. Falls back to
// ADDFD + SEND on kernels without SECCOMP_ADDFD_FLAG_SEND (< 5.14). Returns the fd or -errno.
int notif_inject_fd(int nfd, uint64_t id, int srcfd, bool cloexec);

}  // namespace gdrproxy::proxy
