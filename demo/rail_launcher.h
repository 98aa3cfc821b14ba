// The rail-launcher step of `gdrproxy demo`: the real `gdrproxy netns select`, `move` and
// `restore` commands, run against two stand-in rails.
//
// The idea not to miss: everything happens in network namespaces the demo creates and never
// names. A forked child unshares a fresh namespace that plays the host and creates the veth pair
// rdma0 <-> rdma1 there; the container is a sleeping grandchild in a namespace of its own. When
// those processes end, however they end, the kernel deletes the namespaces and the veth pair with
// them: this machine's own network is never touched and nothing is left behind. A sysfs tree
// constructed in the kernel's layout (select's --sysfs-root) names the two veth ends the RoCE
// netdevs of rxe-like devices rxe0 and rxe1, since the demo must not depend on (or move) a real
// RDMA NIC.
#pragma once

#include <string>

namespace gdrproxy::demo {

// Runs the demo, printing to stdout (the commands it runs write to the same stdout and stderr).
// `self` is the gdrproxy binary to run the commands with. Returns 0 when every command worked and
// the host namespace after `restore` is identical to the one before `move`.
int rail_launcher(const std::string& self);

}  // namespace gdrproxy::demo
