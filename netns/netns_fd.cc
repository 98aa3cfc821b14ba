// Opening, identifying and entering network namespaces (see netns_fd.h).
#include "netns/netns_fd.h"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "netns/error.h"

namespace gdrproxy::netns {

void throw_errno(const std::string& what, int errno_value) {
  throw NetnsError(what + ": " + std::strerror(errno_value));
}

std::string NetnsId::str() const {
  return "net:[" + std::to_string(ino) + "]";
}

NetnsFd::NetnsFd(int fd, std::string describe) : fd_(fd), describe_(std::move(describe)) {
  struct stat st {};
  if (fstat(fd_, &st) != 0) {
    int e = errno;
    ::close(fd_);
    fd_ = -1;
    throw_errno("cannot stat network namespace " + describe_, e);
  }
  // NS_GET_NSTYPE tells a namespace file from any other file; a plain file would make setns
  // fail much later with a less helpful message.
  int type = ioctl(fd_, NS_GET_NSTYPE);
  if (type != CLONE_NEWNET) {
    ::close(fd_);
    fd_ = -1;
    throw NetnsError(describe_ + " is not a network namespace file");
  }
  id_ = NetnsId{static_cast<unsigned long>(st.st_dev), static_cast<unsigned long>(st.st_ino)};
}

NetnsFd NetnsFd::open_path(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("cannot open network namespace " + path, errno);
  return NetnsFd(fd, path);
}

NetnsFd NetnsFd::open_pid(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/ns/net";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("cannot open network namespace of pid " + std::to_string(pid), errno);
  return NetnsFd(fd, "pid " + std::to_string(pid) + " (" + path + ")");
}

NetnsFd NetnsFd::current() {
  int fd = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("cannot open /proc/thread-self/ns/net", errno);
  return NetnsFd(fd, "the current network namespace");
}

NetnsFd::NetnsFd(NetnsFd&& other) noexcept
    : fd_(other.fd_), id_(other.id_), describe_(std::move(other.describe_)) {
  other.fd_ = -1;
}

NetnsFd& NetnsFd::operator=(NetnsFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    id_ = other.id_;
    describe_ = std::move(other.describe_);
    other.fd_ = -1;
  }
  return *this;
}

NetnsFd::~NetnsFd() {
  if (fd_ >= 0) ::close(fd_);
}

void NetnsFd::enter_on_this_thread() const {
  // Only the calling thread changes namespace: threads of one process each have their own
  // nsproxy for CLONE_NEWNET, and this thread ends right after the work.
  if (setns(fd_, CLONE_NEWNET) != 0)
    throw_errno("cannot enter network namespace " + describe_, errno);
}

}  // namespace gdrproxy::netns
