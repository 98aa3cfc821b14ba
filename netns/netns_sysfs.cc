// A private sysfs mount inside a network namespace (see netns_sysfs.h).
#include "netns/netns_sysfs.h"

#include <sched.h>
#include <sys/mount.h>

#include <cerrno>

#include "base/error.h"

namespace gdrproxy::netns {

void in_sysfs_of(const NetnsFd& ns, const std::function<void(const std::string& root)>& fn) {
  ns.run_inside([&] {
    // CLONE_NEWNS gives this thread its own fs_struct too; the process's other threads keep
    // theirs. Private propagation first, so the mount below reaches no other namespace.
    if (::unshare(CLONE_NEWNS) != 0)
      throw_errno("reading sysfs of " + ns.describe() + ": unshare(CLONE_NEWNS)", errno);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      throw_errno("reading sysfs of " + ns.describe() + ": making / private", errno);
    if (::mount("sysfs", "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) !=
        0)
      throw_errno("reading sysfs of " + ns.describe() + ": mount sysfs", errno);
    fn("/sys");
  });
}

}  // namespace gdrproxy::netns
