// A container's synthetic /sys, as OCI spec mounts: the tree of exactly its granted GPUs and RDMA
// NICs (with their PCI ancestry, NUMA nodes and netdevs), built next to config.json, mounted
// read-only at /sys by the runtime itself, and the live bind mounts over its RDMA port
// directories (GIDs and port state change after the build) and CPU topology. The idea not to
// miss: the runtime mounts all of it from the spec, before the tenant runs, so gdrproxy never
// mounts into a rootfs the tenant controls; and the devices shown are derived from the same
// ContainerGrants as /dev, the device cgroup and the agent's session (a granted device the
// host's sysfs cannot place is an error, never a silently different /sys).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "proxy/oci/container_grants.h"

namespace gdrproxy::proxy {

struct ContainerSysfsOptions {
  // The host's sysfs (a test rig points it at a constructed one, which must be a directory named
  // sys; the live binds' sources are then in it too). Same meaning as `cdi generate`'s.
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";  // /proc/driver/nvidia/gpus: a GPU minor's PCI function
};

struct ContainerSysfs {
  std::string tree;               // the built tree (absolute)
  nlohmann::json mounts;          // spec mounts: the tree at /sys first, then the live binds
  std::vector<std::string> gpus;  // the PCI functions of the granted GPUs
  std::vector<std::string> nics;  // the RDMA devices of the granted uverbs nodes
  size_t files = 0, links = 0;
};

// The tree's path for a bundle: <bundle>/gdrproxy-sys (beside config.json, outside the rootfs).
std::string container_sysfs_path(const std::string& bundle);

// Snapshots the host's sysfs, selects the granted devices' PCI functions and builds the tree at
// container_sysfs_path(bundle) (an existing one is replaced atomically). Throws gdrproxy::Error
// naming a granted GPU or uverbs node the host's sysfs or the NVIDIA driver does not show.
ContainerSysfs build_container_sysfs(const std::string& bundle, const ContainerGrants& grants,
                                     const ContainerSysfsOptions& o);

// `mounts` with every /sys mount of the bundle's own (the runtime's sysfs, and anything below
// /sys but the cgroup mount) replaced by `sysfs.mounts`, at the place the bundle's /sys was.
nlohmann::json mounts_with_sysfs(const nlohmann::json& mounts, const ContainerSysfs& sysfs);

}  // namespace gdrproxy::proxy
