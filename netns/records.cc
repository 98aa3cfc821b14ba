// Capture and ensure-present writes of addresses, routes and rules (see records.h).
#include "netns/records.h"

#include <algorithm>

#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <netlink/errno.h>
#include <netlink/route/nexthop.h>

#include "base/error.h"

namespace gdrproxy::netns {
namespace {

std::string family_name(int family) {
  return family == AF_INET6 ? "inet6" : "inet";
}
int family_of(const Json& rec) {
  return rec.at("family") == "inet6" ? AF_INET6 : AF_INET;
}

// Flags the kernel computes itself; passing them back would be ignored at best.
constexpr unsigned kKernelAddrFlags =
    IFA_F_SECONDARY | IFA_F_PERMANENT | IFA_F_TENTATIVE | IFA_F_DADFAILED | IFA_F_DEPRECATED;
constexpr uint32_t kForever = 0xFFFFFFFFu;

template <typename Fn>
void for_each(const ObjList& objs, Fn fn) {
  for (const auto& o : objs) fn(o.get());
}

}  // namespace

Json capture_addrs(const ObjList& addrs, int ifindex) {
  Json out = Json::array();
  for_each(addrs, [&](nl_object* o) {
    auto* a = reinterpret_cast<rtnl_addr*>(o);
    if (rtnl_addr_get_ifindex(a) != ifindex) return;
    int family = rtnl_addr_get_family(a);
    if (family != AF_INET && family != AF_INET6) return;
    Json r;
    r["family"] = family_name(family);
    r["local"] = addr_to_string(rtnl_addr_get_local(a));
    if (nl_addr* p = rtnl_addr_get_peer(a)) r["peer"] = addr_to_string(p);
    if (nl_addr* b = rtnl_addr_get_broadcast(a)) r["broadcast"] = addr_to_string(b);
    r["scope"] = rtnl_addr_get_scope(a);
    r["flags"] = rtnl_addr_get_flags(a);
    if (const char* label = rtnl_addr_get_label(a)) r["label"] = label;
    r["valid_lft"] = rtnl_addr_get_valid_lifetime(a);
    r["preferred_lft"] = rtnl_addr_get_preferred_lifetime(a);
    out.push_back(std::move(r));
  });
  return out;
}

Json capture_routes(const ObjList& routes, nl_cache* links, int ifindex) {
  Json out = Json::array();
  for_each(routes, [&](nl_object* o) {
    auto* r = reinterpret_cast<rtnl_route*>(o);
    if (rtnl_route_get_protocol(r) == RTPROT_KERNEL) return;
    if (rtnl_route_get_flags(r) & RTM_F_CLONED) return;
    bool uses = false;
    Json hops = Json::array();
    std::pair<Json*, nl_cache*> ctx{&hops, links};
    rtnl_route_foreach_nexthop(
        r,
        [](rtnl_nexthop* nh, void* arg) {
          auto* c = static_cast<std::pair<Json*, nl_cache*>*>(arg);
          Json h;
          h["ifname"] = name_by_ifindex(c->second, rtnl_route_nh_get_ifindex(nh));
          h["ifindex"] = rtnl_route_nh_get_ifindex(nh);
          if (nl_addr* gw = rtnl_route_nh_get_gateway(nh)) h["gateway"] = addr_to_string(gw);
          h["weight"] = rtnl_route_nh_get_weight(nh);
          h["flags"] = rtnl_route_nh_get_flags(nh) & RTNH_F_ONLINK;
          c->first->push_back(std::move(h));
        },
        &ctx);
    for (const auto& h : hops) uses = uses || h["ifindex"] == ifindex;
    if (!uses) return;
    Json j;
    j["family"] = family_name(rtnl_route_get_family(r));
    j["table"] = rtnl_route_get_table(r);
    j["type"] = rtnl_route_get_type(r);
    j["scope"] = rtnl_route_get_scope(r);
    j["protocol"] = rtnl_route_get_protocol(r);
    j["priority"] = rtnl_route_get_priority(r);
    j["tos"] = rtnl_route_get_tos(r);
    j["dst"] = addr_to_string(rtnl_route_get_dst(r));
    if (nl_addr* s = rtnl_route_get_src(r)) j["src"] = addr_to_string(s);
    if (nl_addr* ps = rtnl_route_get_pref_src(r)) j["pref_src"] = addr_to_string(ps);
    Json metrics = Json::object();
    for (int m = 1; m <= RTAX_MAX; ++m) {
      uint32_t v = 0;
      if (rtnl_route_get_metric(r, m, &v) == 0) metrics[std::to_string(m)] = v;
    }
    j["metrics"] = metrics;
    j["nexthops"] = hops;
    out.push_back(std::move(j));
  });
  return out;
}

Json capture_rules(const ObjList& rules, const std::string& ifname, const Json& addrs) {
  std::vector<std::string> own;  // the interface's addresses as full-length prefixes
  for (const auto& a : addrs) {
    std::string local = a.at("local");
    std::string bare = local.substr(0, local.find('/'));
    own.push_back(bare + (a.at("family") == "inet6" ? "/128" : "/32"));
  }
  Json out = Json::array();
  for_each(rules, [&](nl_object* o) {
    auto* r = reinterpret_cast<rtnl_rule*>(o);
    const char* iif = rtnl_rule_get_iif(r);
    const char* oif = rtnl_rule_get_oif(r);
    std::string src = addr_to_string(rtnl_rule_get_src(r));
    bool uses = (iif && ifname == iif) || (oif && ifname == oif);
    for (const auto& s : own) uses = uses || s == src;
    if (!uses) return;
    Json j;
    j["family"] = family_name(rtnl_rule_get_family(r));
    j["priority"] = rtnl_rule_get_prio(r);
    j["table"] = rtnl_rule_get_table(r);
    j["action"] = rtnl_rule_get_action(r);
    if (!src.empty()) j["src"] = src;
    if (nl_addr* d = rtnl_rule_get_dst(r)) j["dst"] = addr_to_string(d);
    if (iif) j["iif"] = iif;
    if (oif) j["oif"] = oif;
    if (rtnl_rule_get_mark(r)) j["mark"] = rtnl_rule_get_mark(r);
    if (rtnl_rule_get_mark(r)) j["mask"] = rtnl_rule_get_mask(r);
    if (rtnl_rule_get_dsfield(r)) j["dsfield"] = rtnl_rule_get_dsfield(r);
    if (rtnl_rule_get_action(r) == FR_ACT_GOTO) j["goto"] = rtnl_rule_get_goto(r);
    uint8_t proto = 0;
    if (rtnl_rule_get_protocol(r, &proto) == 0) j["protocol"] = proto;
    out.push_back(std::move(j));
  });
  return out;
}

Json kernel_route_order(const ObjList& routes, nl_cache* links,
                        const std::set<std::string>& names) {
  Json order = Json::array();
  for (const auto& o : routes) {
    auto* r = reinterpret_cast<rtnl_route*>(o.get());
    if (rtnl_route_get_family(r) != AF_INET || rtnl_route_get_protocol(r) != RTPROT_KERNEL)
      continue;
    if (rtnl_route_get_nnexthops(r) < 1) continue;
    std::string name =
        name_by_ifindex(links, rtnl_route_nh_get_ifindex(rtnl_route_nexthop_n(r, 0)));
    if (names.count(name) && std::find(order.begin(), order.end(), name) == order.end())
      order.push_back(name);
  }
  return order;
}

void add_addr(const NlSocket& sock, int ifindex, const std::string& ifname, const Json& rec) {
  int family = family_of(rec);
  AddrPtr a(rtnl_addr_alloc());
  rtnl_addr_set_ifindex(a.get(), ifindex);
  rtnl_addr_set_family(a.get(), family);
  auto local = parse_addr(rec.at("local"), family);
  rtnl_addr_set_local(a.get(), local.get());
  if (rec.contains("peer")) rtnl_addr_set_peer(a.get(), parse_addr(rec["peer"], family).get());
  if (rec.contains("broadcast"))
    rtnl_addr_set_broadcast(a.get(), parse_addr(rec["broadcast"], family).get());
  rtnl_addr_set_scope(a.get(), rec.at("scope").get<int>());
  rtnl_addr_set_flags(a.get(), rec.at("flags").get<unsigned>() & ~kKernelAddrFlags);
  // A label must start with the interface name; one from another name would be refused.
  if (rec.contains("label") && rec["label"].get<std::string>().rfind(ifname, 0) == 0)
    rtnl_addr_set_label(a.get(), rec["label"].get<std::string>().c_str());
  uint32_t valid = rec.value("valid_lft", kForever),
           preferred = rec.value("preferred_lft", kForever);
  if (valid != kForever || preferred != kForever) {
    rtnl_addr_set_valid_lifetime(a.get(), valid);
    rtnl_addr_set_preferred_lifetime(a.get(), preferred);
  }
  int rc = rtnl_addr_add(sock.get(), a.get(), NLM_F_EXCL);
  if (rc == -NLE_NOACCESS && family == AF_INET6)
    throw Error(ifname + ": cannot add address " + describe(rec) + ": IPv6 is disabled on it here",
                EACCES);
  if (rc < 0 && rc != -NLE_EXIST) throw_nl(ifname + ": cannot add address " + describe(rec), rc);
}

void add_route(const NlSocket& sock, nl_cache* links, const Json& rec, bool exist_ok) {
  int family = family_of(rec);
  RoutePtr r(rtnl_route_alloc());
  rtnl_route_set_family(r.get(), family);
  rtnl_route_set_table(r.get(), rec.at("table").get<uint32_t>());
  rtnl_route_set_type(r.get(), rec.at("type").get<uint8_t>());
  rtnl_route_set_scope(r.get(), rec.at("scope").get<uint8_t>());
  rtnl_route_set_protocol(r.get(), rec.at("protocol").get<uint8_t>());
  if (rec.at("priority").get<uint32_t>()) rtnl_route_set_priority(r.get(), rec["priority"]);
  if (rec.at("tos").get<uint8_t>()) rtnl_route_set_tos(r.get(), rec["tos"]);
  rtnl_route_set_dst(r.get(), parse_addr(rec.at("dst"), family).get());
  if (rec.contains("src")) rtnl_route_set_src(r.get(), parse_addr(rec["src"], family).get());
  if (rec.contains("pref_src"))
    rtnl_route_set_pref_src(r.get(), parse_addr(rec["pref_src"], family).get());
  for (const auto& [key, value] : rec.at("metrics").items())
    rtnl_route_set_metric(r.get(), std::stoi(key), value.get<uint32_t>());
  for (const auto& h : rec.at("nexthops")) {
    int ifindex = ifindex_by_name(links, h.at("ifname"));
    if (ifindex == 0)
      throw Error("route " + describe(rec) + ": interface " + h["ifname"].get<std::string>() +
                  " is not in this network namespace");
    rtnl_nexthop* nh = rtnl_route_nh_alloc();
    rtnl_route_nh_set_ifindex(nh, ifindex);
    if (h.contains("gateway"))
      rtnl_route_nh_set_gateway(nh, parse_addr(h["gateway"], family).get());
    if (rec["nexthops"].size() > 1) rtnl_route_nh_set_weight(nh, h.value("weight", 1));
    if (h.value("flags", 0u)) rtnl_route_nh_set_flags(nh, h["flags"].get<unsigned>());
    rtnl_route_add_nexthop(r.get(), nh);  // the route owns nh from here
  }
  int rc = rtnl_route_add(sock.get(), r.get(), NLM_F_EXCL);
  if (rc < 0 && !(rc == -NLE_EXIST && exist_ok)) throw_nl("cannot add route " + describe(rec), rc);
}

void delete_addr(const NlSocket& sock, int ifindex, const std::string& ifname, const Json& rec) {
  int family = family_of(rec);
  AddrPtr a(rtnl_addr_alloc());
  rtnl_addr_set_ifindex(a.get(), ifindex);
  rtnl_addr_set_family(a.get(), family);
  rtnl_addr_set_local(a.get(), parse_addr(rec.at("local"), family).get());
  int rc = rtnl_addr_delete(sock.get(), a.get(), 0);
  if (rc < 0 && rc != -NLE_NOADDR && rc != -NLE_OBJ_NOTFOUND && rc != -NLE_NODEV)
    throw_nl(ifname + ": cannot delete address " + describe(rec), rc);
}

namespace {
RulePtr build_rule(const Json& rec) {
  int family = family_of(rec);
  RulePtr r(rtnl_rule_alloc());
  rtnl_rule_set_family(r.get(), family);
  rtnl_rule_set_prio(r.get(), rec.at("priority").get<uint32_t>());
  rtnl_rule_set_table(r.get(), rec.at("table").get<uint32_t>());
  rtnl_rule_set_action(r.get(), rec.at("action").get<uint8_t>());
  if (rec.contains("src")) rtnl_rule_set_src(r.get(), parse_addr(rec["src"], family).get());
  if (rec.contains("dst")) rtnl_rule_set_dst(r.get(), parse_addr(rec["dst"], family).get());
  if (rec.contains("iif")) rtnl_rule_set_iif(r.get(), rec["iif"].get<std::string>().c_str());
  if (rec.contains("oif")) rtnl_rule_set_oif(r.get(), rec["oif"].get<std::string>().c_str());
  if (rec.contains("mark")) rtnl_rule_set_mark(r.get(), rec["mark"]);
  if (rec.contains("mask")) rtnl_rule_set_mask(r.get(), rec["mask"]);
  if (rec.contains("dsfield")) rtnl_rule_set_dsfield(r.get(), rec["dsfield"]);
  if (rec.contains("goto")) rtnl_rule_set_goto(r.get(), rec["goto"]);
  if (rec.contains("protocol")) rtnl_rule_set_protocol(r.get(), rec["protocol"].get<uint8_t>());
  return r;
}
}  // namespace

void add_rule(const NlSocket& sock, const Json& rec) {
  RulePtr r = build_rule(rec);
  // NLM_F_EXCL matters here: without it the kernel happily adds an identical second rule.
  int rc = rtnl_rule_add(sock.get(), r.get(), NLM_F_EXCL);
  if (rc < 0 && rc != -NLE_EXIST) throw_nl("cannot add rule " + describe(rec), rc);
}

void delete_rule(const NlSocket& sock, const Json& rec) {
  RulePtr r = build_rule(rec);
  int rc = rtnl_rule_delete(sock.get(), r.get(), 0);
  if (rc < 0 && rc != -NLE_OBJ_NOTFOUND && rc != -NLE_NOADDR)
    throw_nl("cannot delete rule " + describe(rec), rc);
}

std::string describe(const Json& rec) {
  std::string s;
  for (const char* key : {"local", "dst", "src", "iif", "oif", "table", "priority"}) {
    if (!rec.contains(key)) continue;
    if (!s.empty()) s += " ";
    s += std::string(key) + " " +
         (rec[key].is_string() ? rec[key].get<std::string>() : rec[key].dump());
  }
  return "{" + s + "}";
}

}  // namespace gdrproxy::netns
