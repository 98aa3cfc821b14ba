// Which netdevs are backed by an RDMA device, read from a sysfs tree in the kernel's layout:
//   <root>/class/infiniband/<ibdev>/ports/<port>/gids/<i>
//   <root>/class/infiniband/<ibdev>/ports/<port>/gid_attrs/types/<i>   ("RoCE v2", "IB/RoCE v1")
//   <root>/class/infiniband/<ibdev>/ports/<port>/gid_attrs/ndevs/<i>   (netdev name)
//   <root>/class/infiniband/<ibdev>/device/net/<netdev>
// The root is /sys on a real host; tests pass a constructed tree of the same layout.
//
// The idea not to miss: an unused GID slot reads back as the zero GID, and its type/ndev files
// fail with EINVAL; such slots are skipped, not errors. The GID table follows the netdev's
// addresses, so the index NCCL needs is the RoCE v2 entry whose IPv4-mapped GID is one of the
// netdev's current addresses.
#pragma once

#include <string>
#include <vector>

namespace gdrproxy::netns {

struct GidEntry {
  unsigned index = 0;
  std::string gid;   // as sysfs prints it: 8 groups of 4 hex digits
  std::string type;  // "RoCE v2", "IB/RoCE v1"; "" if unreadable
  std::string ndev;  // "" if none
  std::string ipv4;  // dotted form when the GID is IPv4-mapped (::ffff:a.b.c.d), else ""
};

struct RdmaNetdev {
  std::string netdev;
  std::string ibdev;
  unsigned port = 0;
  std::vector<GidEntry> gids;  // this port's populated entries that belong to `netdev`
};

// Every (netdev, ibdev, port) under `sysfs_root`, ordered by ibdev, port, netdev.
// Throws gdrproxy::Error if <root>/class/infiniband cannot be read (a missing directory means no
// RDMA devices and gives an empty list).
std::vector<RdmaNetdev> enumerate_rdma_netdevs(const std::string& sysfs_root);

// The verbs nodes ("uverbs0") of RDMA device `ibdev`, sorted: those under its bus device
// (<root>/class/infiniband/<ibdev>/device/infiniband_verbs/), or, for a device on no bus
// (soft-RoCE: rxe has no device link), the nodes whose <root>/class/infiniband_verbs/<node>/ibdev
// names it. The one ibdev-to-uverbs lookup of the C++ (the harness's grants, the runtime shim's
// rails).
std::vector<std::string> verbs_nodes_of_ibdev(const std::string& sysfs_root,
                                              const std::string& ibdev);

// The netdevs of the RDMA device whose verbs node is `uverbs` (verbs_nodes_of_ibdev), as
// enumerate_rdma_netdevs finds them, each once; empty when no device has that node or it has no
// netdev (InfiniBand).
std::vector<std::string> netdevs_of_verbs_node(const std::string& sysfs_root,
                                               const std::string& uverbs);

// The RoCE v2 IPv4 GID index of `dev`: the entry whose IPv4 is in `ipv4s` if any, else the
// lowest RoCE v2 IPv4 entry; -1 if there is none.
int roce_v2_ipv4_gid_index(const RdmaNetdev& dev, const std::vector<std::string>& ipv4s);

}  // namespace gdrproxy::netns
