// Writing a filtered sysfs tree from a snapshot.
//
// The idea not to miss: the tree is written into a fresh sibling directory and only renamed onto
// the requested path once complete, so a reader (or a container about to mount it) never sees a
// half-written tree. Every link is relative and spelled exactly as the kernel spells it, because
// NCCL and hwloc parse link strings (readlink) as well as resolve them (realpath).
// An attribute the host refuses to read (snapshot.h's `refused`) is written as an empty file:
// a mount point for the plan's live bind of the host's file (mount_plan.h). No file of a tmpfs
// tree can fail read() with EINVAL or ENODATA, and a missing one says ENOENT, which readers
// (rdma-core, NCCL, hwloc, UCX) take for something else.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "sysfs/selection.h"
#include "sysfs/snapshot.h"

namespace gdrproxy::sysfs {

struct BuildOptions {
  std::string out;     // final path of the tree (mounted at /sys in the container)
  bool force = false;  // replace an existing tree at `out` (atomically swapped, then removed)
  // Leave RDMA port directories empty: they are mount points for the live bind mounts of the
  // mount plan, which must then be applied before the tree is used. Saves the static GID, GID
  // attribute and P_Key tables (most of the files of an RDMA node).
  bool live_ports = false;
};

struct BuildResult {
  std::string path;
  size_t dirs = 0, files = 0, links = 0;
  size_t refused = 0;              // of `files`: mount points of refused attributes (see above)
  std::vector<std::string> notes;  // selection decisions and static-value caveats
};

// Throws gdrproxy::Error (naming the path that failed); on error nothing is left at `out`.
BuildResult build_tree(const Snapshot& s, const Selection& sel, const BuildOptions& opt);

// The path of an RDMA port directory inside a built tree, relative to the tree root.
std::string port_dir_in_tree(const Snapshot& s, const IbDevice& d, const IbPort& p);

}  // namespace gdrproxy::sysfs
