// RDMA devices that go with their rails in exclusive RDMA netns mode.
//
// The idea not to miss: in exclusive mode (`rdma system set netns exclusive`, what rdma-cni
// clusters run) an RDMA device is visible only in the network namespace that holds it, so moving
// a rail's netdev alone leaves the container without its RDMA device. `move` therefore moves each
// RDMA device with a port on the rail into the target after the netdev (RDMA_NLDEV_CMD_SET with
// RDMA_NLDEV_NET_NS_FD, the order rdma-cni uses), and `restore` moves it back before the netdev.
// In shared mode every namespace sees every device, and nothing is moved. The kernel moves a
// device only in exclusive mode and only if its driver can disassociate user contexts
// (ib_device_set_netns_put: EOPNOTSUPP otherwise); a refusal is one line naming the device, the
// rail and the kernel's reason, and the move is rolled back. A device is known by its kernel
// index (global, kept across moves, never chosen by a tenant) checked against its node GUID, never
// by its name, which whoever holds it may change: restore gives the journaled name back. A
// namespace that dies hands its RDMA devices to the initial namespace (rdma_dev_exit_net), where
// restore finds them when that is where it runs. rxe devices do not follow their netdev at all
// (soft_roce.h); rxe registers the one it makes again in the initial namespace, and
// place_soft_roce puts it where its rail is.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "netns/netns_fd.h"
#include "netns/rdma_nl.h"
#include "netns/records.h"

namespace gdrproxy::netns {

// Journal records ({"name", "index", "node_guid"}) of the RDMA devices with a port on netdev
// `ifindex` as `nl`'s namespace sees them, leaving out those named in `except` (rxe devices).
Json rdma_devices_on(const RdmaNl& nl, int ifindex, const std::vector<std::string>& except);

// Moves each device of the rail record `rec` ("rdma_devices") from this namespace into `target`.
// Throws gdrproxy::Error naming the device, the rail and the kernel's reason at the first refusal.
void move_rdma_devices(const Json& rec, const NetnsFd& target, std::ostream& log);

// After rxe device `ibdev` was made on `netdev` inside `where`: when `where` does not see it but
// this namespace does (exclusive mode: rxe registered it here), moves it into `where`. Throws
// gdrproxy::Error when neither sees it or the kernel refuses the move.
void place_soft_roce(const std::string& ibdev, const std::string& netdev, const NetnsFd& where,
                     std::ostream& log);

// Brings each device of the rail record `rec` back into `host` (the calling thread's namespace),
// from `target` when it is there (null: gone), and gives it back its journaled name. Returns how
// many devices could not be given back or were refused; each is one line on `log`.
int return_rdma_devices(const Json& rec, const NetnsFd& host, const NetnsFd* target,
                        std::ostream& log);

}  // namespace gdrproxy::netns
