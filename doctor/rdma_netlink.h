// RDMA devices as the kernel's RDMA netlink (nldev) reports them to this network namespace, and
// the RDMA netns mode, compared with what sysfs shows.
//
// The idea not to miss: libibverbs finds devices through sysfs, while rdma_cm and the kernel
// resolve them in the caller's network namespace. A synthetic or stale /sys that lists a device
// this namespace cannot use (exclusive netns mode with the device elsewhere), or misses one it
// can, makes the two views disagree and the job fails at connect time. The questions go through
// the rail launcher's RDMA netlink client (netns/rdma_nl.h), the one this project has.
#pragma once

#include <string>
#include <vector>

#include "doctor/context.h"
#include "doctor/report.h"
#include "netns/rdma_nl.h"

namespace gdrproxy::doctor {

struct NldevView {
  bool ok = false;
  std::string error;                 // why the query failed
  std::vector<std::string> devices;  // RDMA_NLDEV_CMD_GET dump
  netns::RdmaNetnsMode netns_mode = netns::RdmaNetnsMode::kUnknown;
};

// Queries this network namespace's NETLINK_RDMA socket (one dump, one SYS_GET).
NldevView query_nldev();

// Compares `view` with the devices under ctx.sysfs_root/class/infiniband.
void compare_nldev(const Context& ctx, const NldevView& view, Report& report);

// Only when ctx.sysfs_root is this node's /sys.
void check_rdma_netlink(const Context& ctx, Report& report);

}  // namespace gdrproxy::doctor
