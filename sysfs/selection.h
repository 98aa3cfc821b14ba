// Which devices of a snapshot a built tree exposes.
//
// The idea not to miss: the unit of selection is the PCI function, and a selected function drags
// in everything a consumer walks to reach it: every ancestor bridge (NCCL keeps every second
// level, hwloc needs all of them), and function 0 of its device (NCCL rewrites a NIC's BDF to
// function 0, and to device 00 for VFs, before it looks the path up again).
// The RDMA devices shown are another matter: with NICs named, exactly the named RDMA devices,
// never another device that hangs off a selected function (a software siw on the NIC's netdev),
// so a software RDMA device appears in a tenant's tree only when it is granted. A software
// device with no PCI function at all (rxe) is never in a snapshot (capture.h).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "sysfs/snapshot.h"

namespace gdrproxy::sysfs {

struct SelectionRequest {
  bool gpus_given = false;        // false: every NVIDIA GPU (vendor 0x10de, class 0x03xxxx)
  std::vector<std::string> gpus;  // BDFs
  bool nics_given = false;        // false: every RDMA NIC with a usable GID
  // RDMA device names ("mlx5_0"): exactly those RDMA devices; interface names ("eth2"): the
  // interface's function and its interfaces, but no RDMA device that is not named too.
  std::vector<std::string> nics;
};

struct Selection {
  std::set<std::string> pci;               // every BDF the tree contains (closure)
  std::vector<std::string> gpus;           // the selected GPU functions
  std::vector<std::string> nic_functions;  // the selected NIC functions
  std::vector<const IbDevice*> ib;         // RDMA devices exposed
  std::vector<const NetDevice*> net;       // interfaces exposed
  std::vector<std::string> notes;          // logged decisions (NICs left out, ...)
};

// An NVIDIA display/3D controller. A BMC's VGA function (class 0x0300, another vendor) is not one.
bool is_gpu(const PciFunction& f);
// GID usability: what a port needs before NCCL's IB transport can use the device. The rule
// depends on the port's link_layer (the kernel prints "InfiniBand", "Ethernet" or "Unknown"):
//  - Ethernet (RoCE): a non-zero GID bound to a netdev (gid_attrs/ndevs/<i> non-empty; the kernel
//    answers EINVAL for a GID with no netdev). NCCL picks a RoCE GID through its netdev and finds
//    none on such a port; its topology then keeps a NET node no device backs ("Could not find NET
//    with id N").
//  - InfiniBand: a non-zero GID (InfiniBand ports have no netdevs).
//  - Unknown or missing: as InfiniBand. Only on Ethernet ports does NCCL go through netdevs, and a
//    hand-written or older snapshot may lack the attribute: requiring a netdev there would drop
//    devices that work.
enum class GidRule {
  kNonZero,            // some non-zero GID
  kNonZeroWithNetdev,  // some non-zero GID whose gid_attrs/ndevs entry names a netdev
};
GidRule gid_rule(const IbPort& p);
// True if some GID of `p` satisfies gid_rule(p).
bool port_has_usable_gid(const IbPort& p);
// True if some port of `d` has a usable GID.
bool has_usable_gid(const IbDevice& d);
// Empty if `d` has a usable GID; otherwise why not, naming each port and the rule it fails:
// "RoCE (Ethernet) port 1 has no non-zero GID bound to a netdev", "InfiniBand port 1 has no
// non-zero GID", "no port".
std::string unusable_gid_reason(const IbDevice& d);
// Throws gdrproxy::Error naming the unknown device.
Selection select(const Snapshot& s, const SelectionRequest& req);
// Splits "a,b,c" (empty string or "none" -> empty list).
std::vector<std::string> split_list(const std::string& s);

}  // namespace gdrproxy::sysfs
