// The host's device nodes that gdrproxy brokers, keyed by device number. A device is identified
// by the st_rdev of a file the supervisor itself opened, never by the path a caller spelled, so
// symlinks, `..`, bind mounts and /proc/self/fd re-opens all land on the same answer. Nodes are
// found two ways: by the well-known names (/dev/infiniband/*, /dev/nvidia*, /dev/nvidia-caps/*)
// and by driver (proxy/abi/device_drivers.h: every node under /dev whose major, or misc minor,
// belongs to an RDMA or NVIDIA driver). A device number of such a driver that no node here
// carries (a minor made with mknod) still maps to a guarded, never-granted entry.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "proxy/decode/decoded_call.h"

namespace gdrproxy::proxy {

struct DeviceNode {
  std::string path;  // host path, e.g. /dev/infiniband/uverbs0
  std::string name;  // grant name: path below /dev, e.g. infiniband/uverbs0 -> "uverbs0"
  DeviceClass device_class = DeviceClass::kUnknown;
  dev_t rdev = 0;
  bool brokerable = false;  // uverbsN, rdma_cm, nvidiactl, nvidiaN, nvidia-uvm(-tools), caps
  // A node of a guarded driver that the catalog a holder began with lacks (its driver registered
  // later): never granted to that holder (proxy/devices/live_catalog.h).
  bool uncatalogued = false;
  // A uverbs node: the provider serving its IB device (enum rdma_driver_id, 0 when not known),
  // from sysfs (proxy/devices/uverbs_provider.h). Its driver-namespace calls are named and judged
  // under that provider.
  uint32_t rdma_driver = 0;
};

class DeviceCatalog {
 public:
  // Scans <dev_root>/infiniband/*, <dev_root>/nvidia*, <dev_root>/nvidia-caps/*, then every
  // character device under <dev_root> (two levels) whose driver is guarded, reading the drivers'
  // numbers from <proc_root>/devices and <proc_root>/misc, and each uverbs node's provider from
  // <sys_root>/class/infiniband_verbs.
  static DeviceCatalog scan(const std::string& dev_root = "/dev",
                            const std::string& proc_root = "/proc",
                            const std::string& sys_root = "/sys");

  // The catalogued node with this device number; else the driver's never-granted entry when the
  // number belongs to a guarded driver; else nullptr (not a device of ours).
  const DeviceNode* find(dev_t rdev) const;
  // The node found on the host with this device number, or nullptr (no driver entries).
  const DeviceNode* find_node(dev_t rdev) const;
  const DeviceNode* find_by_name(const std::string& name_or_path) const;
  const std::vector<DeviceNode>& nodes() const { return nodes_; }
  // One entry per guarded driver this host has registered: its rdev holds the driver's major
  // (and, for a misc driver, its minor).
  const std::vector<DeviceNode>& drivers() const { return drivers_; }
  // Directories whose every entry is a guarded device (no Landlock rule is given for them).
  const std::vector<std::string>& guarded_dirs() const { return guarded_dirs_; }
  // Where scan() looked: a rescan looks there again.
  const std::string& dev_root() const { return dev_root_; }
  const std::string& proc_root() const { return proc_root_; }

 private:
  std::string dev_root_ = "/dev";
  std::string proc_root_ = "/proc";
  std::vector<DeviceNode> nodes_;
  std::vector<std::string> guarded_dirs_;
  // One never-granted entry per guarded driver: its rdev holds the driver's major (and, for a
  // misc driver, its minor).
  std::vector<DeviceNode> drivers_;
};

// The guarded driver that device number `rdev` belongs to according to <proc_root>/devices (or
// <proc_root>/misc, for a misc minor) as they read now, as a never-granted entry; nullopt: a
// device of no guarded driver. `registered`: whether any driver holds the number now.
std::optional<DeviceNode> guarded_driver_now(dev_t rdev, const std::string& proc_root = "/proc",
                                             bool* registered = nullptr);

// Why `node` (not granted) is refused, for a refusal line: names the device number of a node
// that was not catalogued.
std::string ungranted_reason(const DeviceNode& node);

// Which devices a sandbox may use. No grant list at all = every brokerable device; an empty list
// (or the single spec "none") = no device.
class Grants {
 public:
  // Resolves each spec (a name like "uverbs0"/"nvidia0"/"rdma_cm" or a /dev path) against the
  // catalog; throws std::runtime_error naming an unknown device.
  static Grants from_specs(const DeviceCatalog& catalog,
                           const std::optional<std::vector<std::string>>& specs);
  bool granted(const DeviceNode& node) const;
  bool all() const { return all_; }
  std::vector<std::string> names() const;

 private:
  bool all_ = true;
  std::vector<std::string> names_;
};

// Devices whose fds must be opened by the sandboxed task itself: their write() commands are
// accepted only from the opener's credentials (the kernel's ib_safe_file_access).
bool opened_by_caller(DeviceClass c);

}  // namespace gdrproxy::proxy
