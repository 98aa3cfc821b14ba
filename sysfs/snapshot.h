// The snapshot model: what gdrproxy records about a host's PCI / InfiniBand / net / NUMA sysfs,
// and its versioned JSON form.
//
// The idea not to miss: attribute values are kept as the exact bytes the kernel printed (trailing
// newline included), and every PCI function keeps its canonical path under /sys/devices. The
// builder never invents a value or a path; it only re-lays out what is recorded here, so a program
// reading the built tree sees what it would have read on the host. An attribute the host refuses
// to read (a down link's speed: EINVAL) is recorded with that errno, never as absent or empty:
// the tree serves it through a live bind of the host's file (mount_plan.h), which fails as the
// host's does.
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
// file name -> the errno the host's open() or read() of it returned (the file exists: an absent
// one is simply not recorded). Written to JSON by name ("EINVAL"); a snapshot without it loads.
using RefusedMap = std::map<std::string, int>;

// One PCI function (device, bridge, or root port).
struct PciFunction {
  std::string bdf;   // "0000:0c:00.0"
  std::string path;  // under devices/: "pci0000:07/0000:07:01.0/0000:08:00.0"
  AttrMap attrs;     // class, vendor, device, numa_node, uevent, ...
  RefusedMap refused;
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
// from `gids` is the kernel's zero GID, absent from `pkeys` is 0x0000. An entry of
// `gid_types`/`gid_ndevs` whose read() fails (an empty slot: ENODATA since Linux 5.10, EINVAL
// before; a GID with no netdev: EINVAL) has its errno in `gid_types_refused`/`gid_ndevs_refused`;
// in an older snapshot, which has neither, such an entry is simply absent.
struct IbPort {
  int num = 0;
  AttrMap
      attrs;  // state, phys_state, rate, link_layer, lid, sm_lid, sm_sl, lid_mask_count, cap_mask
  RefusedMap refused;
  int gid_table_len = 0;
  std::map<int, std::string> gids;
  std::map<int, std::string> gid_types;
  std::map<int, std::string> gid_ndevs;
  std::map<int, int> gid_types_refused;
  std::map<int, int> gid_ndevs_refused;
  int pkey_table_len = 0;
  std::map<int, std::string> pkeys;
  std::string host_path;  // absolute host path of the port dir (source of the live bind mount)
};

struct UverbsDevice {
  std::string name;  // "uverbs0"
  AttrMap attrs;     // ibdev, dev, abi_version
  RefusedMap refused;
};

struct IbDevice {
  std::string name;  // "mlx5_0"
  std::string pci;   // BDF of the PCI function it hangs off
  AttrMap attrs;     // node_type, node_guid, sys_image_guid, fw_ver, hca_type, board_id, ...
  RefusedMap refused;
  std::vector<IbPort> ports;
  std::optional<UverbsDevice> verbs;
};

struct NetDevice {
  std::string name;     // "eth2", "ib0"
  std::string pci;      // BDF of the PCI function it belongs to
  std::string subpath;  // below the PCI dir: "net/eth2" or "virtio2/net/eth0"
  AttrMap attrs;        // address, mtu, type, dev_port, dev_id, operstate, speed, ifindex
  RefusedMap refused;   // speed, carrier of a link that is down: EINVAL
};

struct NumaNode {
  int id = 0;
  AttrMap attrs;  // cpumap, cpulist
  RefusedMap refused;
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

// "EINVAL" for EINVAL; "errno 4000" for a number the C library has no name for.
std::string errno_name(int e);

// JSON conversion. from_json throws gdrproxy::Error with a message naming the offending field.
nlohmann::json to_json(const Snapshot& s);
Snapshot snapshot_from_json(const nlohmann::json& j);
// File helpers: load checks schema and version; both throw gdrproxy::Error with the path in it.
Snapshot load_snapshot(const std::string& path);
void save_snapshot(const Snapshot& s, const std::string& path);

}  // namespace gdrproxy::sysfs
