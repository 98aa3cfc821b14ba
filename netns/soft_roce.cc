// Soft-RoCE devices through RDMA netlink (see soft_roce.h).
#include "netns/soft_roce.h"

#include <rdma/rdma_netlink.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/error.h"
#include "netns/rdma_nl.h"

namespace gdrproxy::netns {
namespace {

std::string first_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  return line;
}

}  // namespace

std::vector<std::string> soft_roce_devices_on(const std::string& netdev,
                                              const std::string& sysfs_root) {
  std::vector<std::string> out;
  const std::filesystem::path cls = std::filesystem::path(sysfs_root) / "class" / "infiniband";
  std::error_code none;
  if (!std::filesystem::exists(cls, none)) return out;  // no RDMA device at all
  for (const auto& p : rdma_port_netdevs()) {
    if (p.netdev != netdev) continue;
    std::error_code ec;
    const auto dir = cls / p.ibdev;
    if (first_line(dir / "parent") != netdev || std::filesystem::exists(dir / "device", ec))
      continue;
    if (std::find(out.begin(), out.end(), p.ibdev) == out.end()) out.push_back(p.ibdev);
  }
  return out;
}

bool ensure_soft_roce(const std::string& ibdev, const std::string& netdev, int wait_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  const std::string what =
      "making soft-RoCE device " + ibdev + " on " + netdev + " (rdma link add)";
  const RdmaNl nl;
  for (;;) {
    bool here = false;
    for (const auto& p : rdma_port_netdevs(nl))
      here = here || (p.ibdev == ibdev && p.netdev == netdev);
    if (here) return false;
    // The old device leaves the listing before it lets go: until then the kernel answers ENFILE
    // (its name is still taken) or EEXIST (rxe still counts it as configured on the netdev),
    // depending on how far its unregistration has gone.
    int error = 0;
    nl.request(RDMA_NLDEV_CMD_NEWLINK, 0,
               {nl_str(RDMA_NLDEV_ATTR_DEV_NAME, ibdev), nl_str(RDMA_NLDEV_ATTR_LINK_TYPE, "rxe"),
                nl_str(RDMA_NLDEV_ATTR_NDEV_NAME, netdev)},
               what, &error);
    if (error == 0) return true;
    if (error != ENFILE && error != EEXIST) throw_errno(what, error);
    if (std::chrono::steady_clock::now() >= deadline)
      throw Error(what + ": " +
                  (error == ENFILE ? "the name is still taken"
                                   : "an rxe device is still configured on " + netdev) +
                  " " + std::to_string(wait_ms) + " ms after " + netdev +
                  " moved (the old device does not go away)");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace gdrproxy::netns
