// A rail's identity: what the kernel says about a link that a tenant holding it in its network
// namespace (CAP_NET_ADMIN there, a pinned namespace) cannot set, recorded in the journal before
// the move and compared at restore.
//
// The idea not to miss: name, MAC and alias are the tenant's to set, so they are hints at most. A
// link is the rail only if its kind, parent device (a NIC's PCI function), permanent address and
// IFLA_LINK (a veth's other end, which stays outside the tenant) agree with the journal. Its
// ifindex agrees too, unless the kernel renumbered it: a move keeps the ifindex unless the
// destination already has one of that number (dev_change_net_namespace), so a rail is accepted
// with another ifindex only when it has one of those anchors. Every read is done as the origin
// namespace sees it (IFLA_TARGET_NETNSID), because IFLA_LINK_NETNSID is a number relative to the
// namespace that asks: read from inside the target, the same peer has another one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "netns/nl.h"
#include "netns/records.h"

namespace gdrproxy::netns {

struct LinkIdentity {
  int ifindex = 0;
  std::string name;       // hint only (messages)
  std::string mac;        // hint only (messages)
  std::string kind;       // IFLA_INFO_KIND; "" for a device without one (a NIC's driver)
  std::string parent;     // "bus/device" (IFLA_PARENT_DEV_BUS_NAME/NAME), "" if none
  std::string perm_addr;  // IFLA_PERM_ADDRESS, "" where the driver has none
  int link_ifindex = 0;   // IFLA_LINK: a veth's peer, a vlan's lower device; 0 if none
  // Where link_ifindex is: "origin" or "nsid N" in the origin's ids; in a journal also
  // kPeerIsARail, for a peer that is itself a rail of the same move (it goes where the rail goes).
  std::string link_netns;

  // Parent device, permanent address or IFLA_LINK to outside the move: something besides kind
  // and ifindex that the tenant cannot make. (A veth pair lent whole is the tenant's to rebuild.)
  bool anchored() const;
  // One escaped line: kind, ifindex, anchors, then the hints (name quoted).
  std::string describe() const;
  Json to_json() const;  // the anchors and ifindex; the hints live in the record itself
  // Throws gdrproxy::Error when `j` is not an identity record.
  static LinkIdentity from_json(const Json& j);
};

inline constexpr const char* kPeerIsARail = "a rail of the same move";

// Whether `got` is the device `want` describes: every anchor and the kind agree. The ifindex is
// the caller's to weigh (see the top of this file). A peer that is a rail of the same move may be
// in any of `rail_places` (where restore looks: "origin", and the target's "nsid N").
bool same_device(const LinkIdentity& want, const LinkIdentity& got,
                 const std::vector<std::string>& rail_places);

// Reads links as the namespace it is made in (the origin) sees them, through a socket of its own.
class LinkReader {
 public:
  LinkReader();
  // Every link of the origin (no nsid) or of the namespace the origin numbers `nsid`.
  std::vector<LinkIdentity> links(std::optional<int> nsid = std::nullopt) const;
  // The id the origin gives `ns`; assigned now if it has none.
  int nsid_of(const NetnsFd& ns) const;

 private:
  int query_nsid(int fd) const;  // kNsidNotAssigned when none
  NlSocket sock_;
  NetnsFd self_;
};

}  // namespace gdrproxy::netns
