// Live state for a built tree: the bind mounts that replace static RDMA port directories with the
// host's own.
//
// The idea not to miss: GID tables, gid_attrs, port state and counters change after the tree is
// built (a rail gets its address, a netdev moves into the container's namespace and its GIDs are
// re-created), so those directories must be read from the kernel at read time. The plan lists,
// per exposed port, one read-only bind mount of the host's ports/<n> directory over the tree's
// copy; the tree keeps a static copy underneath so it stays valid when nothing is mounted.
// Static identity (PCI ids, GUIDs, firmware) comes from the snapshot.
//
// An attribute the host refuses to read (a down link's speed: EINVAL; snapshot.h's `refused`)
// gets one read-only bind of the host's own file over the tree's empty placeholder. A bind is
// the faithful way: the tree is a plain tmpfs, whose files cannot fail read() with a chosen
// errno, while the bound kernfs file keeps the host's exact errno, live (it reads once the link
// is up again), for root and non-root tenants alike, with no process serving it. Inside a port
// directory the directory's own bind already does this.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sysfs/selection.h"
#include "sysfs/snapshot.h"

namespace gdrproxy::sysfs {

struct BindMount {
  std::string source;  // host path (absolute)
  std::string target;  // path inside the tree (relative to its root)
  std::string why;
  bool file = false;  // a file (a refused attribute) onto a file, else a directory onto one
  // Skipped, leaving the tree's placeholder, when the source is gone at apply time: a netdev's
  // directory leaves the host's sysfs when the interface moves into another network namespace
  // (a rail moved between plan and apply).
  bool optional = false;
};

struct MountPlan {
  std::string tree;  // the built tree (absolute)
  std::vector<BindMount> binds;
  std::vector<std::string> notes;
};

// `host_root` prefixes every source (default "/": the running host; tests point it at a copy).
// Throws gdrproxy::Error when a target is missing in the tree or a source is missing on the host.
MountPlan make_mount_plan(const Snapshot& s, const Selection& sel, const std::string& tree,
                          const std::string& host_root = "/");
nlohmann::json to_json(const MountPlan& p);
MountPlan mount_plan_from_json(const nlohmann::json& j);

// Applies the plan in the caller's mount namespace (which must be a private one: see the OCI hook)
// and then bind-mounts the whole tree read-only at `sys_target` if it is not empty. Returns an
// error message naming the mount that failed, or "" on success; on failure mounts already made
// are undone.
// `sys_target` is resolved without following any symlink; with `root` (the container's rootfs,
// a host path resolved normally) it is a path inside that root, resolved as if it were `/`.
std::string apply_mount_plan(const MountPlan& p, const std::string& sys_target = "",
                             const std::string& root = "");

}  // namespace gdrproxy::sysfs
