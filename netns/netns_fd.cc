// Opening, identifying and entering network namespaces (see netns_fd.h).
#include "netns/netns_fd.h"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <cerrno>

#include "base/error.h"

namespace gdrproxy::netns {

std::string NetnsId::str() const {
  return "net:[" + std::to_string(ino) + "]";
}

NetnsFd::NetnsFd(UniqueFd fd, std::string describe)
    : fd_(std::move(fd)), describe_(std::move(describe)) {
  // On a throw below, fd_ closes the descriptor.
  struct stat st {};
  if (fstat(fd_.get(), &st) != 0) throw_errno("cannot stat network namespace " + describe_, errno);
  // NS_GET_NSTYPE tells a namespace file from any other file; a plain file would make setns
  // fail much later with a less helpful message.
  int type = ioctl(fd_.get(), NS_GET_NSTYPE);
  if (type != CLONE_NEWNET) throw Error(describe_ + " is not a network namespace file");
  id_ = NetnsId{static_cast<unsigned long>(st.st_dev), static_cast<unsigned long>(st.st_ino)};
}

NetnsFd NetnsFd::open_path(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno("cannot open network namespace " + path, errno);
  return NetnsFd(std::move(fd), path);
}

NetnsFd NetnsFd::open_pid(pid_t pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/ns/net";
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno("cannot open network namespace of pid " + std::to_string(pid), errno);
  return NetnsFd(std::move(fd), "pid " + std::to_string(pid) + " (" + path + ")");
}

NetnsFd NetnsFd::current() {
  UniqueFd fd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno("cannot open /proc/thread-self/ns/net", errno);
  return NetnsFd(std::move(fd), "the current network namespace");
}

void NetnsFd::enter_on_this_thread() const {
  // Only the calling thread changes namespace: threads of one process each have their own
  // nsproxy for CLONE_NEWNET, and this thread ends right after the work.
  if (setns(fd_.get(), CLONE_NEWNET) != 0)
    throw_errno("cannot enter network namespace " + describe_, errno);
}

}  // namespace gdrproxy::netns
