// Whether an fd a runtime handed over is a seccomp user-notification listener. The idea not to
// miss: the state's "seccompFd" is only an index into the fds that came with it, and any fd can
// be sent there (an eventfd, a pipe, a socket); a session built on one would wait on it for
// ever. The kernel names a listener's file "anon_inode:seccomp notify", and only a listener
// answers SECCOMP_IOCTL_NOTIF_ID_VALID for an id it does not hold with ENOENT (another file
// answers ENOTTY, or EINVAL from a driver's own ioctl handler): both must say so.
#pragma once

#include <string>

namespace gdrproxy::proxy {

// True for a seccomp listener; otherwise false with `why` saying what the fd is instead (its
// /proc/self/fd name, which the sender may choose: print it escaped).
bool is_seccomp_listener(int fd, std::string& why);

}  // namespace gdrproxy::proxy
