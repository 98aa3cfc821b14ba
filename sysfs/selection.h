// Which devices of a snapshot a built tree exposes.
//
// The idea not to miss: the unit of selection is the PCI function, and a selected function drags
// in everything a consumer walks to reach it: every ancestor bridge (NCCL keeps every second
// level, hwloc needs all of them), and function 0 of its device (NCCL rewrites a NIC's BDF to
// function 0, and to device 00 for VFs, before it looks the path up again).
#pragma once

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "sysfs/snapshot.h"

namespace gdrproxy::sysfs {

struct SelectionRequest {
  bool gpus_given = false;        // false: every NVIDIA GPU (vendor 0x10de, class 0x03xxxx)
  std::vector<std::string> gpus;  // BDFs
  bool nics_given = false;        // false: every RDMA NIC with a usable GID
  std::vector<std::string> nics;  // RDMA device names ("mlx5_0") or interface names ("eth2")
};

struct Selection {
  std::set<std::string> pci;               // every BDF the tree contains (closure)
  std::vector<std::string> gpus;           // the selected GPU functions
  std::vector<std::string> nic_functions;  // the selected NIC functions
  std::vector<const IbDevice*> ib;         // RDMA devices exposed
  std::vector<const NetDevice*> net;       // interfaces exposed
  std::vector<std::string> notes;          // logged decisions (NICs left out, ...)
};

struct SelectionError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An NVIDIA display/3D controller. A BMC's VGA function (class 0x0300, another vendor) is not one.
bool is_gpu(const PciFunction& f);
// True if some port of `d` has a non-zero GID.
bool has_usable_gid(const IbDevice& d);
// Throws SelectionError naming the unknown device.
Selection select(const Snapshot& s, const SelectionRequest& req);
// Splits "a,b,c" (empty string or "none" -> empty list).
std::vector<std::string> split_list(const std::string& s);

}  // namespace gdrproxy::sysfs
