// Rail selection: which RDMA-backed netdevs a job gets, by the rules cluster users rely on.
//
// The rules, in the order they apply (each dropped candidate gets a note saying why):
//  1. candidates are netdevs backed by an RDMA device (rdma_sysfs.h; on the live /sys, not one
//     whose port RDMA netlink says has its netdev in another namespace); with allow_plain_rails
//     also the namespace's other netdevs but lo ("plain rails": veths of a test rig), which get
//     no ibdev, no GID index and no place in NCCL_IB_HCA;
//  2. the exclusion regex (default ^eth[0-9]+$, "" disables) drops names right away,
//     unless the name is in the include-list;
//  3. a non-empty include-list keeps only its names, as the real records (real ibdev, port,
//     GIDs); a name that is not a candidate is an error, never a made-up record;
//  4. a netdev absent from this network namespace is dropped;
//  5. a netdev without IPv4 is dropped (unless keep_no_ipv4);
//  6. with a peer list, only names the peer also has stay (symmetric multi-node sets);
//  7. the default-route / bootstrap interface is dropped, or is an error if it was asked for
//     by name, unless allow_bootstrap.
// The idea not to miss: select_rails_from() is pure (a LiveView describes the namespace), so
// every rule is testable without hardware; select_rails() fills the LiveView from netlink, and
// says which RDMA netns mode the node is in (rdma_nl.h): in exclusive mode `move` takes each
// rail's RDMA device with it, in shared mode every namespace sees every device.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "netns/rdma_sysfs.h"
#include "netns/records.h"

namespace gdrproxy::netns {

struct SelectOptions {
  std::string sysfs_root = "/sys";
  std::string exclude_regex = "^eth[0-9]+$";
  std::vector<std::string> include;
  bool keep_no_ipv4 = false;
  std::optional<std::vector<std::string>> peer;
  bool allow_bootstrap = false;
  std::vector<std::string> bootstrap_addrs;
  bool allow_plain_rails = false;  // netdevs no RDMA device backs are candidates too
};

// What the current network namespace says about each netdev name.
struct LiveView {
  std::map<std::string, std::vector<std::string>> ipv4;  // present netdevs -> IPv4 addresses
  std::map<std::string, std::string> bootstrap;          // netdev -> why it must stay
};

struct SelectedRail {
  std::string netdev, ibdev;  // ibdev "" for a plain rail
  unsigned port = 0;
  int gid_index = -1;  // RoCE v2 IPv4 GID index, -1 if none
  std::vector<std::string> ipv4;
};

struct Selection {
  std::vector<SelectedRail> rails;
  std::vector<std::string> notes;
  std::string nccl_ib_hca;  // "=mlx5_0:1,mlx5_1:1"; "" when nothing is selected
  // The kernel's RDMA netns mode ("shared", "exclusive"); "" when not known (no RDMA netlink, or
  // a --sysfs-root other than this node's /sys).
  std::string rdma_netns_mode;
};

Selection select_rails_from(const std::vector<RdmaNetdev>& candidates, const LiveView& live,
                            const SelectOptions& opts);
Selection select_rails(const SelectOptions& opts);

Json selection_to_json(const Selection& s);
std::string selection_to_text(const Selection& s);

// Netdev names from a peer's `select --json` output.
std::vector<std::string> peer_names_from_json(const Json& j, const std::string& origin);

}  // namespace gdrproxy::netns
