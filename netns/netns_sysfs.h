// sysfs as a network namespace sees it.
//
// The idea not to miss: sysfs shows the class directories of netdevs and of RDMA devices
// (/sys/class/net, /sys/class/infiniband) for the network namespace that *mounted* it, not for
// the reader's. The host's /sys therefore does not show an RDMA device that exclusive RDMA netns
// mode moved into a container's namespace. in_sysfs_of() mounts a fresh sysfs on a short-lived
// thread that has entered the namespace and a private mount namespace of its own (nothing
// propagates to the host's mounts, and the mount ends with the thread), and runs the reader there.
#pragma once

#include <functional>
#include <string>

#include "netns/netns_fd.h"

namespace gdrproxy::netns {

// Runs fn(root), root being a sysfs mounted inside `ns`. Throws gdrproxy::Error naming the step
// (unshare, mount) that failed; fn's exception is rethrown in the caller.
void in_sysfs_of(const NetnsFd& ns, const std::function<void(const std::string& root)>& fn);

}  // namespace gdrproxy::netns
