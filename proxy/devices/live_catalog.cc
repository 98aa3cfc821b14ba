#include "proxy/devices/live_catalog.h"

#include <sys/sysmacros.h>

#include <optional>
#include <string>
#include <utility>

namespace gdrproxy::proxy {

LiveCatalog::LiveCatalog(DeviceCatalog first, Clock::duration min_rescan_interval)
    : current_(std::make_shared<const DeviceCatalog>(std::move(first))),
      min_interval_(min_rescan_interval) {}

std::shared_ptr<const DeviceCatalog> LiveCatalog::rescan_if_due(Clock::time_point now) const {
  std::shared_ptr<const DeviceCatalog> c = current_.load(std::memory_order_acquire);
  if (last_rescan_ && now - *last_rescan_ < min_interval_) return c;
  last_rescan_ = now;
  // Built whole, then published in one store: a reader has the old snapshot or the new one.
  c = std::make_shared<const DeviceCatalog>(DeviceCatalog::scan(c->dev_root(), c->proc_root()));
  current_.store(c, std::memory_order_release);
  rescans_.fetch_add(1, std::memory_order_relaxed);
  return c;
}

std::shared_ptr<const DeviceCatalog> LiveCatalog::refreshed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rescan_if_due(Clock::now());
}

const DeviceNode* LiveCatalog::uncatalogued(dev_t rdev) const {
  // Asked of the kernel at each miss: a driver may have registered a moment ago. Only a number
  // found held by another driver (/dev/null's mem, a tty) is trusted for an interval: it cannot
  // become a guarded driver's while that driver holds it.
  const dev_t key = major(rdev) == 10 ? rdev : makedev(major(rdev), 0);
  const Clock::time_point asked = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ordinary_.find(key);
    if (it != ordinary_.end() && asked - it->second < min_interval_) return nullptr;
  }
  const std::shared_ptr<const DeviceCatalog> seen = snapshot();
  bool registered = false;
  std::optional<DeviceNode> driver = guarded_driver_now(rdev, seen->proc_root(), &registered);
  std::lock_guard<std::mutex> lock(mu_);
  if (!driver) {
    if (registered) ordinary_[key] = asked;  // one per major or misc minor: bounded
    return nullptr;
  }
  ordinary_.erase(key);
  if (auto it = entries_.find(rdev); it != entries_.end()) return &it->second;
  std::shared_ptr<const DeviceCatalog> now = current_.load(std::memory_order_acquire);
  const DeviceNode* found = now->find_node(rdev);
  // The newest snapshot lacks this driver or node: rescan, unless one ran a moment ago.
  if (!found) {
    now = rescan_if_due(asked);
    found = now->find_node(rdev);
  }
  // Named after the node the host has for it, when a snapshot found one.
  DeviceNode n = found ? *found : *driver;
  if (!found)
    n.path = "char device " + std::to_string(major(rdev)) + ":" + std::to_string(minor(rdev)) +
             " of " + driver->name;
  n.rdev = rdev;
  n.brokerable = false;
  n.uncatalogued = true;
  if (entries_.size() < kMaxEntries) return &entries_.emplace(rdev, std::move(n)).first->second;
  if (auto it = per_driver_.find(key); it != per_driver_.end()) return &it->second;
  n.rdev = key;
  return &per_driver_.emplace(key, std::move(n)).first->second;
}

}  // namespace gdrproxy::proxy
