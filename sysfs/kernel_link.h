// The relative target the kernel spells for a sysfs link. The idea not to miss: a rebuilt tree
// must spell every link as the kernel does (climbing only as far as it must), or a reader that
// compares readlink() output sees a tree no kernel would show.
#pragma once

#include <string>
#include <string_view>

namespace gdrproxy::sysfs {

// The relative target the kernel writes for a link placed in directory `from_dir` pointing at
// `target` (both relative to the same root, no leading '/'): climb until a proper ancestor of the
// target is reached, then descend. E.g. from "devices/p/0000:82:00.0/infiniband/mlx4_0" to
// "devices/p/0000:82:00.0" gives "../../../0000:82:00.0", as sysfs shows it.
std::string kernel_relative_link(std::string_view from_dir, std::string_view target);

}  // namespace gdrproxy::sysfs
