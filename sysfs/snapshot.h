// The snapshot model: what gdrproxy records about a host's PCI / InfiniBand / net / NUMA sysfs,
// and its versioned JSON form.
//
// The idea not to miss: attribute values are kept as the exact bytes the kernel printed (trailing
// newline included), and every PCI function keeps its canonical path under /sys/devices. The
// builder never invents a value or a path; it only re-lays out what is recorded here, so a program
// reading the built tree sees what it would have read on the host.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace gdrproxy::sysfs {

// Schema identity. A reader refuses a document whose version is newer than it understands.
inline constexpr const char* kSnapshotSchema = "gdrproxy.sysfs.snapshot";
inline constexpr int kSnapshotVersion = 1;

using AttrMap = std::map<std::string, std::string>;  // file name -> exact contents

// One PCI function (device, bridge, or root port).
struct PciFunction {
  std::string bdf;                       // "0000:0c:00.0"
  std::string path;                      // under devices/: "pci0000:07/0000:07:01.0/0000:08:00.0"
  AttrMap attrs;                         // class, vendor, device, numa_node, uevent, ...
  std::string config;                    // binary config space (may be empty)
  std::string driver;                    // basename of the `driver` link, empty if unbound
  std::vector<std::string> child_buses;  // "0000:09" for a bridge: its pci_bus/<bus> dirs
  std::string physfn;                    // BDF of the PF if this is an SR-IOV VF
};

// A root complex directory devices/pciDDDD:BB and the buses it hosts.
struct RootComplex {
  std::string dir;                 // "pci0000:07"
  std::vector<std::string> buses;  // "0000:07"
};

// One port of an RDMA device. GID and P_Key tables are stored sparsely: an index that is absent
// from `gids` is the kernel's zero GID, absent from `gid_types`/`gid_ndevs` is an entry whose
// read() fails (EINVAL), absent from `pkeys` is 0x0000.
struct IbPort {
  int num = 0;
  AttrMap
      attrs;  // state, phys_state, rate, link_layer, lid, sm_lid, sm_sl, lid_mask_count, cap_mask
  int gid_table_len = 0;
  std::map<int, std::string> gids;
  std::map<int, std::string> gid_types;
  std::map<int, std::string> gid_ndevs;
  int pkey_table_len = 0;
  std::map<int, std::string> pkeys;
  std::string host_path;  // absolute host path of the port dir (source of the live bind mount)
};

struct UverbsDevice {
  std::string name;  // "uverbs0"
  AttrMap attrs;     // ibdev, dev, abi_version
};

struct IbDevice {
  std::string name;  // "mlx5_0"
  std::string pci;   // BDF of the PCI function it hangs off
  AttrMap attrs;     // node_type, node_guid, sys_image_guid, fw_ver, hca_type, board_id, ...
  std::vector<IbPort> ports;
  std::optional<UverbsDevice> verbs;
};

struct NetDevice {
  std::string name;     // "eth2", "ib0"
  std::string pci;      // BDF of the PCI function it belongs to
  std::string subpath;  // below the PCI dir: "net/eth2" or "virtio2/net/eth0"
  AttrMap attrs;        // address, mtu, type, dev_port, dev_id, operstate, speed, ifindex
};

struct NumaNode {
  int id = 0;
  AttrMap attrs;  // cpumap, cpulist
};

struct Snapshot {
  int version = kSnapshotVersion;
  std::string source;  // the sysfs root it was read from
  std::vector<RootComplex> roots;
  std::vector<PciFunction> pci;  // sorted by path (parents before children)
  std::vector<IbDevice> ib;
  std::optional<std::string> uverbs_abi_version;  // class/infiniband_verbs/abi_version
  std::vector<NetDevice> net;
  std::vector<NumaNode> numa;
  AttrMap peer_memory;  // path under the sysfs root -> contents, only markers present on the host
  std::vector<std::string> omissions;  // what was left out and why
  // False when captured without the ports' GID and P_Key tables (CaptureOptions): such a
  // snapshot builds only trees with live ports and is never saved.
  bool port_tables = true;

  const PciFunction* find_pci(const std::string& bdf) const;
  const IbDevice* find_ib(const std::string& name) const;
  const NetDevice* find_net(const std::string& name) const;
};

// JSON conversion. from_json throws gdrproxy::Error with a message naming the offending field.
nlohmann::json to_json(const Snapshot& s);
Snapshot snapshot_from_json(const nlohmann::json& j);
// File helpers: load checks schema and version; both throw gdrproxy::Error with the path in it.
Snapshot load_snapshot(const std::string& path);
void save_snapshot(const Snapshot& s, const std::string& path);

}  // namespace gdrproxy::sysfs
