// The GPU/NIC topology as NCCL derives it from a sysfs tree, and the path type between devices.
//
// The idea not to miss: NCCL does not read the PCI tree as it is. It resolves a BDF through
// class/pci_bus/<bus>/../../<bdf>, a NIC through realpath(class/infiniband/<dev>/device) folded to
// function 0, and then walks up the path two components at a time, so only every second bridge
// (the upstream port of each switch) becomes a node; Broadcom Gen4/Gen5 switch pairs are then
// merged. The path type follows from that reduced tree. Reproducing it here lets tests compare the
// host's and the sandbox's view without a GPU.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gdrproxy::sysfs {

enum class PathType { PIX, PXB, PHB, SYS };
const char* to_string(PathType t);

// One device as NCCL places it.
struct NcclEndpoint {
  std::string name;                // GPU BDF or RDMA device name
  std::string bdf;                 // the BDF NCCL uses (function 0 for NICs)
  std::string real;                // realpath it resolved to, relative to the tree
  std::vector<std::string> chain;  // NCCL's PCI switch nodes, nearest first (after merging)
  int numa = -1;                   // the CPU node it attaches to
  std::string error;               // why NCCL would fall back to "attach to first CPU"
};

struct NcclView {
  std::vector<NcclEndpoint> gpus;
  std::vector<NcclEndpoint> nics;
};

// GPUs are PCI functions of class 0x03xxxx under bus/pci/devices; NICs are class/infiniband.
NcclView nccl_view(const std::string& root);
// PIX: one switch between them; PXB: several switches, no CPU; PHB: through one CPU; SYS: across
// CPUs. Endpoints with an error are placed on no CPU and get SYS.
PathType path_type(const NcclEndpoint& a, const NcclEndpoint& b);

}  // namespace gdrproxy::sysfs
