// Applying journaled configuration (see configure.h).
#include "netns/configure.h"

#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>

#include <cerrno>
#include <set>

#include "base/error.h"
#include "netns/link_ops.h"
#include "netns/steps.h"
#include "netns/sysctl.h"

namespace gdrproxy::netns {
namespace {

// "192.0.2.7/24" -> "192.0.2.0/24".
std::string ipv4_network(const std::string& local) {
  NlAddrPtr a = parse_addr(local, AF_INET);
  unsigned prefix = nl_addr_get_prefixlen(a.get());
  auto* bytes = static_cast<unsigned char*>(nl_addr_get_binary_addr(a.get()));
  for (unsigned bit = prefix; bit < 32; ++bit)
    bytes[bit / 8] &= static_cast<unsigned char>(~(0x80u >> (bit % 8)));
  return addr_to_string(a.get());
}

std::string bare(const std::string& prefixed) {
  return prefixed.substr(0, prefixed.find('/'));
}

}  // namespace

void configure_link(const NlSocket& sock, const Json& iface, std::ostream& log) {
  const std::string name = iface.at("name");
  LinkPtr link = find_link(sock, name);
  if (!link) throw Error(name + ": not found after the move");
  unsigned mtu = iface.at("mtu");
  if (rtnl_link_get_mtu(link.get()) != mtu) set_mtu(sock, link.get(), mtu);
  step_done(name + ": MTU");
  int ifindex = rtnl_link_get_ifindex(link.get());
  for (const auto& a : iface.at("addrs")) {
    try {
      add_addr(sock, ifindex, name, a);
    } catch (const Error& e) {
      if (e.error_code() != EACCES) throw;
      log << "note: " << e.what() << " (IPv6 disabled in this namespace): left out\n";
    }
  }
  step_done(name + ": addresses");
  bool up = iface.at("up");
  if (link_is_up(link.get()) != up) set_up(sock, link.get(), up);
  step_done(name + ": link state");
}

void configure_routes(const NlSocket& sock, const Json& routes, const std::string& ifname,
                      bool exist_ok) {
  Json pending = routes;
  // A gateway route fails with ENETUNREACH until the route to its gateway exists; retrying the
  // failures after the rest settles any order. Bounded by the number of routes.
  for (size_t pass = 0; !pending.empty(); ++pass) {
    CachePtr links = sock.links();
    Json failed = Json::array();
    std::string last_error;
    for (const auto& r : pending) {
      try {
        add_route(sock, links.get(), r, exist_ok);
      } catch (const Error& e) {
        failed.push_back(r);
        last_error = e.what();
      }
    }
    if (failed.size() == pending.size() || pass > routes.size())
      throw Error(ifname + ": " + last_error);
    pending = failed;
  }
  step_done(ifname + ": routes");
}

void configure_rules(const NlSocket& sock, const Json& rules, const std::string& ifname) {
  for (const auto& r : rules) {
    try {
      add_rule(sock, r);
    } catch (const Error& e) {
      throw Error(ifname + ": " + e.what());
    }
  }
  step_done(ifname + ": rules");
}

void configure_sysctls(const NetnsFd& ns, const std::string& ifname, const Json& values) {
  ns.run_inside([&] {
    for (const auto& [key, value] : values.items())
      write_conf_sysctl(ifname, key, value.get<int>());
  });
  step_done(ifname + ": sysctls");
}

Json source_routing_routes(const Json& iface, const ArpProfile& profile, unsigned rail_index) {
  Json out = Json::array();
  if (!profile.source_routing) return out;
  const unsigned table = profile.table_base + rail_index;
  const std::string name = iface.at("name");
  std::set<std::string> subnets;  // a secondary address in the same subnet adds no route
  for (const auto& a : iface.at("addrs")) {
    if (a.at("family") != "inet" || !subnets.insert(ipv4_network(a.at("local"))).second) continue;
    out.push_back(Json{{"family", "inet"},
                       {"table", table},
                       {"type", RTN_UNICAST},
                       {"scope", RT_SCOPE_LINK},
                       {"protocol", RTPROT_STATIC},
                       {"priority", 0},
                       {"tos", 0},
                       {"dst", ipv4_network(a.at("local"))},
                       {"pref_src", bare(a.at("local")) + "/32"},
                       {"metrics", Json::object()},
                       {"nexthops", Json::array({Json{{"ifname", name}}})}});
  }
  for (const auto& r : iface.at("routes")) {
    if (r.at("family") != "inet" || r.at("table") != RT_TABLE_MAIN || r.at("nexthops").size() != 1)
      continue;
    Json copy = r;
    copy["table"] = table;
    out.push_back(copy);
  }
  return out;
}

Json source_routing_rules(const Json& iface, const ArpProfile& profile, unsigned rail_index) {
  Json out = Json::array();
  if (!profile.source_routing) return out;
  for (const auto& a : iface.at("addrs")) {
    if (a.at("family") != "inet") continue;
    out.push_back(Json{{"family", "inet"},
                       {"priority", profile.rule_priority_base + rail_index},
                       {"table", profile.table_base + rail_index},
                       {"action", FR_ACT_TO_TBL},
                       {"src", bare(a.at("local")) + "/32"},
                       {"protocol", RTPROT_STATIC}});
  }
  return out;
}

}  // namespace gdrproxy::netns
