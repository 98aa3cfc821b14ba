// The device catalog as drivers register after start (nvidia-uvm and rdma_ucm load on demand).
// The idea not to miss: a catalog is an immutable snapshot, and a holder keeps the one it began
// with, since its grants, Landlock rules and LSM tables were all made from it. A device number
// that snapshot lacks is asked about here: when /proc/devices or /proc/misc says, at that moment,
// that its driver is a guarded one, the host is rescanned (at most once per interval), the new
// snapshot is published whole for holders that start later, and the caller gets a never-granted
// entry, so the node is refused, not let through. A number of no guarded driver stays nobody's
// (one held by another driver, /dev/null's, is then trusted for the interval: it cannot become a
// guarded driver's while held; a number nobody holds is asked about at every miss).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "proxy/devices/device_catalog.h"

namespace gdrproxy::proxy {

class LiveCatalog {
 public:
  using Clock = std::chrono::steady_clock;

  explicit LiveCatalog(DeviceCatalog first,
                       Clock::duration min_rescan_interval = std::chrono::seconds(1));

  // The newest snapshot; never changes once returned.
  std::shared_ptr<const DeviceCatalog> snapshot() const {
    return current_.load(std::memory_order_acquire);
  }

  // For a character device number the caller's own snapshot does not catalog: a never-granted
  // entry (uncatalogued set) when it belongs to a guarded driver now, else nullptr. The entry
  // lives as long as this object. Thread-safe.
  const DeviceNode* uncatalogued(dev_t rdev) const;

  // The newest snapshot after a rescan, unless one ran within the interval: for a holder about to
  // start (a container the agent is given), so that a driver loaded since is catalogued for it.
  std::shared_ptr<const DeviceCatalog> refreshed() const;

  uint64_t rescans() const { return rescans_.load(std::memory_order_relaxed); }

 private:
  // Rescans and publishes the host's catalog when the last rescan is older than the interval;
  // mu_ held. Returns the newest snapshot.
  std::shared_ptr<const DeviceCatalog> rescan_if_due(Clock::time_point now) const;

  // Distinct device numbers remembered one by one; beyond, one entry per driver.
  static constexpr size_t kMaxEntries = 4096;

  mutable std::atomic<std::shared_ptr<const DeviceCatalog>> current_;
  const Clock::duration min_interval_;
  mutable std::atomic<uint64_t> rescans_{0};
  mutable std::mutex mu_;  // guards what follows; held across a rescan
  mutable std::optional<Clock::time_point> last_rescan_;
  // Entries handed out: a node's address never changes once in a std::map.
  mutable std::map<dev_t, DeviceNode> entries_;
  mutable std::map<dev_t, DeviceNode> per_driver_;
  // Numbers (a major, or a misc minor) last found held by a driver that is not guarded, and when.
  mutable std::map<dev_t, Clock::time_point> ordinary_;
};

}  // namespace gdrproxy::proxy
