// Default-route / bootstrap-address guard (see guard.h).
#include "netns/guard.h"

#include <linux/rtnetlink.h>
#include <netlink/route/nexthop.h>

#include "netns/records.h"

namespace gdrproxy::netns {
namespace {

struct NexthopMatch {
  int ifindex;
  bool found;
};

bool route_uses(rtnl_route* r, int ifindex) {
  NexthopMatch m{ifindex, false};
  rtnl_route_foreach_nexthop(
      r,
      [](rtnl_nexthop* nh, void* arg) {
        auto* match = static_cast<NexthopMatch*>(arg);
        if (rtnl_route_nh_get_ifindex(nh) == match->ifindex) match->found = true;
      },
      &m);
  return m.found;
}

}  // namespace

std::optional<std::string> bootstrap_reason(const NlSocket& sock, const std::string& ifname,
                                            const std::vector<std::string>& bootstrap_addrs) {
  CachePtr links = sock.links();
  int ifindex = ifindex_by_name(links.get(), ifname);
  if (ifindex == 0) return std::nullopt;
  for (const auto& o : sock.routes()) {
    auto* r = reinterpret_cast<rtnl_route*>(o.get());
    if (rtnl_route_get_table(r) != RT_TABLE_MAIN) continue;
    nl_addr* dst = rtnl_route_get_dst(r);
    if (dst && nl_addr_get_prefixlen(dst) != 0) continue;
    if (route_uses(r, ifindex)) return "carries the default route";
  }
  if (bootstrap_addrs.empty()) return std::nullopt;
  for (const auto& a : capture_addrs(sock.addrs(), ifindex)) {
    std::string local = a.at("local");
    std::string bare = local.substr(0, local.find('/'));
    for (const auto& b : bootstrap_addrs)
      if (b == bare || b == local) return "carries the bootstrap address " + b;
  }
  return std::nullopt;
}

}  // namespace gdrproxy::netns
