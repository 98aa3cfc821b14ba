// Soft-RoCE (rxe) devices on rails: found through RDMA netlink, made again after a namespace move.
//
// The idea not to miss: a real RDMA device follows its netdev into another network namespace, but
// rxe unregisters its device when the netdev leaves (a namespace move sends the
// NETDEV_UNREGISTER rxe acts on). So `move` records each rail's rxe devices in the journal and
// makes them again, same name, on the rail in the target (`rdma link add NAME type rxe netdev
// RAIL`, asked inside the target, where the kernel resolves the netdev name); `restore` makes them
// again on the host. The kernel unregisters the old device from a work queue and holds its name
// until it is gone, so making it again retries (bounded) while the kernel says the name is taken.
// Which netdev a device's port has is what RDMA netlink reports to the asking namespace only: the
// same netdev name in another namespace is another netdev. A device is rxe when sysfs shows rxe's
// own `parent` attribute and no bus device. A new device may get another uverbs node than the old
// one had: grants name nodes after the move. rxe registers every device it makes in the initial
// network namespace, whichever namespace asked: in exclusive RDMA netns mode the move then puts
// the new device where its rail is (rdma_netns.h).
#pragma once

#include <string>
#include <vector>

#include "netns/rdma_nl.h"

namespace gdrproxy::netns {

// The rxe devices whose port has `netdev` of the calling thread's namespace, by name.
std::vector<std::string> soft_roce_devices_on(const std::string& netdev,
                                              const std::string& sysfs_root = "/sys");

// Makes rxe device `ibdev` on `netdev` of the calling thread's namespace, unless it is already
// there (returns false then). While the old device, being unregistered, still holds the name or
// the netdev, retries for up to `wait_ms`; one that stays is an error naming it.
bool ensure_soft_roce(const std::string& ibdev, const std::string& netdev, int wait_ms = 10000);

}  // namespace gdrproxy::netns
