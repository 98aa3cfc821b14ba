// NCCL-style topology reading; see nccl_view.h.
#include "sysfs/nccl_view.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "base/file_io.h"
#include "sysfs/bdf.h"

namespace gdrproxy::sysfs {

const char* to_string(PathType t) {
  switch (t) {
    case PathType::PIX:
      return "PIX";
    case PathType::PXB:
      return "PXB";
    case PathType::PHB:
      return "PHB";
    case PathType::SYS:
      return "SYS";
  }
  return "?";
}

namespace {

std::string attr(const std::string& dir, const char* name) {
  return trim(read_text(dir + "/" + name).value_or(""));
}

uint64_t hexval(const std::string& s) {
  return std::strtoull(s.c_str(), nullptr, 16);
}

// NCCL's Broadcom PEX generation of a switch at `level` (0: the top switch, 1: a sub-switch),
// 0 if it is not one. NCCL packs vendor:device:subsystem_vendor:subsystem_device into 64 bits and
// compares all but the low 12 bits: Gen4 is 1000:c010:1000:axxx at either level, Gen5 is
// 1000:c030:1000:0xxx at level 0 and 1000:c030:1000:1xxx at level 1.
int bcm_gen(const std::string& dir, int level) {
  uint64_t id = hexval(attr(dir, "vendor")) << 48 | hexval(attr(dir, "device")) << 32 |
                hexval(attr(dir, "subsystem_vendor")) << 16 | hexval(attr(dir, "subsystem_device"));
  if ((id & 0xfffffffffffff000ull) == 0x1000c0101000a000ull) return 4;
  if ((id & 0xfffffffffffff000ull) ==
      (0x1000c03010000000ull | static_cast<uint64_t>(level) * 0x1000))
    return 5;
  return 0;
}

class Reader {
 public:
  explicit Reader(std::string root) : root_(real_path(root).value_or(root)) {}

  // NCCL's ncclOsGetPciPath: realpath(/sys/class/pci_bus/<bus>/../../<bdf>).
  std::optional<std::string> pci_path(const std::string& bdf) {
    return real_path(root_ + "/class/pci_bus/" + bus_of(bdf) + "/../../" + bdf);
  }

  void place(NcclEndpoint& e, const std::string& path) {
    auto sub = real_path(path + "/subsystem");
    if (!sub || basename_of(*sub) != "pci") {
      e.error = "is not a PCI device (subsystem is not pci)";
      return;
    }
    e.real = path.substr(std::min(path.size(), root_.size() + 1));
    // Parent walk: strip components; a non-BDF component is the CPU; a BDF two strips up is the
    // next PCI node.
    std::string p = path;
    std::string node_dir = path;
    int stripped = 0;
    std::vector<std::string> dirs;  // the switch nodes' directories
    for (;;) {
      p = dirname_of(p);
      std::string last = basename_of(p);
      if (p.size() <= root_.size() || !is_nccl_bdf(last)) {
        std::string numa = attr(node_dir, "numa_node");
        e.numa = numa.empty() ? -1 : std::atoi(numa.c_str());
        break;
      }
      if (++stripped == 2) {
        dirs.push_back(p);
        node_dir = p;
        stripped = 0;
      }
    }
    // Broadcom flattening: a level-1 sub-switch directly below a level-0 switch of the same PEX
    // generation is merged into it, so the sub-switch disappears from the chain.
    for (size_t i = 0; i < dirs.size(); ++i) {
      if (i + 1 < dirs.size()) {
        int g = bcm_gen(dirs[i + 1], 0);
        if (g && bcm_gen(dirs[i], 1) == g) continue;
      }
      e.chain.push_back(basename_of(dirs[i]));
    }
  }

  NcclView run() {
    NcclView v;
    for (const auto& bdf : list_dir(root_ + "/bus/pci/devices")) {
      std::string dir = root_ + "/bus/pci/devices/" + bdf;
      if (attr(dir, "class").rfind("0x03", 0) != 0) continue;
      NcclEndpoint e;
      e.name = e.bdf = bdf;
      auto p = pci_path(bdf);
      if (!p)
        e.error = "could not find real path of " + bdf;
      else
        place(e, *p);
      v.gpus.push_back(std::move(e));
    }
    for (const auto& dev : list_dir(root_ + "/class/infiniband")) {
      NcclEndpoint e;
      e.name = dev;
      auto real = real_path(root_ + "/class/infiniband/" + dev + "/device");
      if (!real) {
        e.error = "could not find real path of class/infiniband/" + dev + "/device";
      } else {
        // Multi-port and VF merging: look the NIC up as device 00 function 0.
        e.bdf = device0_of(basename_of(*real));
        auto p = pci_path(e.bdf);
        if (!p)
          e.error = "could not find real path of " + e.bdf;
        else
          place(e, *p);
      }
      v.nics.push_back(std::move(e));
    }
    return v;
  }

 private:
  std::string root_;
};

}  // namespace

NcclView nccl_view(const std::string& root) {
  return Reader(root).run();
}

PathType path_type(const NcclEndpoint& a, const NcclEndpoint& b) {
  if (!a.error.empty() || !b.error.empty()) return PathType::SYS;
  if (a.numa != b.numa) return PathType::SYS;
  // Lowest common switch: PIX if it is the direct parent of both, PXB if deeper, PHB if none.
  for (size_t i = 0; i < a.chain.size(); ++i) {
    auto it = std::find(b.chain.begin(), b.chain.end(), a.chain[i]);
    if (it == b.chain.end()) continue;
    size_t j = static_cast<size_t>(it - b.chain.begin());
    return (i == 0 && j == 0) ? PathType::PIX : PathType::PXB;
  }
  return PathType::PHB;
}

}  // namespace gdrproxy::sysfs
