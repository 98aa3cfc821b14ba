// The rtnetlink attributes and messages that identify a link, read raw because libnl-3 (3.7)
// parses none of the newer ones: one table, checked against the kernel's uapi headers.
//
// The idea not to miss: these numbers are kernel ABI. The identity reader (link_identity.cc)
// names them only through this file, so a reader sees in one place which attributes a rail's
// identity rests on and since which kernel each is there.
#pragma once

#include <linux/if_link.h>
#include <linux/net_namespace.h>
#include <linux/rtnetlink.h>

namespace gdrproxy::netns::rtnl_abi {

// RTM_GETLINK attributes of an identity (and the one RTM_NEWLINK attribute restore sets).
inline constexpr int kIfname = 3;          // IFLA_IFNAME: the tenant's to set (a hint)
inline constexpr int kAddress = 1;         // IFLA_ADDRESS: the tenant's to set (a hint)
inline constexpr int kLink = 5;            // IFLA_LINK: veth peer / lower device ifindex
inline constexpr int kLinkinfo = 18;       // IFLA_LINKINFO, nesting kInfoKind
inline constexpr int kInfoKind = 1;        // IFLA_INFO_KIND: "veth", "vlan"; none for a NIC
inline constexpr int kLinkNetnsid = 37;    // IFLA_LINK_NETNSID: where kLink is (4.0)
inline constexpr int kTargetNetnsid = 46;  // IFLA_TARGET_NETNSID: read another namespace (4.20)
inline constexpr int kNewIfindex = 49;     // IFLA_NEW_IFINDEX: the ifindex a move gives (6.7)
inline constexpr int kPermAddress = 54;    // IFLA_PERM_ADDRESS: the driver's burnt-in MAC (5.6)
inline constexpr int kParentDevName = 56;  // IFLA_PARENT_DEV_NAME: "0000:3b:00.0" (5.16)
inline constexpr int kParentBusName = 57;  // IFLA_PARENT_DEV_BUS_NAME: "pci" (5.16)
inline constexpr int kMaxAttr = kParentBusName;

// RTM_GETNSID / RTM_NEWNSID: the id a namespace gives another (4.0).
inline constexpr int kNetnsaNsid = 1;        // NETNSA_NSID
inline constexpr int kNetnsaFd = 3;          // NETNSA_FD
inline constexpr int kNsidNotAssigned = -1;  // NETNSA_NSID_NOT_ASSIGNED
inline constexpr int kGetNsid = 90;          // RTM_GETNSID
inline constexpr int kNewNsid = 88;          // RTM_NEWNSID

static_assert(kIfname == IFLA_IFNAME && kAddress == IFLA_ADDRESS && kLink == IFLA_LINK &&
              kLinkinfo == IFLA_LINKINFO && kInfoKind == IFLA_INFO_KIND &&
              kLinkNetnsid == IFLA_LINK_NETNSID && kTargetNetnsid == IFLA_TARGET_NETNSID &&
              kNewIfindex == IFLA_NEW_IFINDEX && kPermAddress == IFLA_PERM_ADDRESS &&
              kParentDevName == IFLA_PARENT_DEV_NAME && kParentBusName == IFLA_PARENT_DEV_BUS_NAME);
static_assert(kNetnsaNsid == NETNSA_NSID && kNetnsaFd == NETNSA_FD &&
              kNsidNotAssigned == NETNSA_NSID_NOT_ASSIGNED && kGetNsid == RTM_GETNSID &&
              kNewNsid == RTM_NEWNSID);

}  // namespace gdrproxy::netns::rtnl_abi
