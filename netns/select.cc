// Rail selection rules (see select.h).
#include "netns/select.h"

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include <netlink/route/link.h>

#include "base/error.h"
#include "netns/guard.h"
#include "netns/rdma_nl.h"
#include "netns/soft_roce.h"

namespace gdrproxy::netns {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// "rdma0 (mlx5_0)", or just the name of a plain rail.
std::string label(const RdmaNetdev& c) {
  return c.ibdev.empty() ? c.netdev : c.netdev + " (" + c.ibdev + ")";
}

}  // namespace

Selection select_rails_from(const std::vector<RdmaNetdev>& candidates, const LiveView& live,
                            const SelectOptions& opts) {
  Selection sel;
  std::optional<std::regex> exclude;
  if (!opts.exclude_regex.empty()) {
    try {
      exclude.emplace(opts.exclude_regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw Error("bad exclusion regex '" + opts.exclude_regex + "': " + e.what());
    }
  }
  for (const auto& name : opts.include) {
    bool known = std::any_of(candidates.begin(), candidates.end(),
                             [&](const RdmaNetdev& c) { return c.netdev == name; });
    if (!known)
      throw Error(name + (opts.allow_plain_rails
                              ? ": no such netdev in this network namespace"
                              : ": not backed by any RDMA device under " + opts.sysfs_root +
                                    "/class/infiniband (the include-list names RDMA netdevs; "
                                    "--allow-plain-rails takes others too)"));
  }
  for (const auto& c : candidates) {
    const bool included = contains(opts.include, c.netdev);
    if (exclude && !included && std::regex_search(c.netdev, *exclude)) {
      sel.notes.push_back(c.netdev + ": excluded by regex " + opts.exclude_regex);
      continue;
    }
    if (!opts.include.empty() && !included) {
      sel.notes.push_back(c.netdev + ": not in the include-list");
      continue;
    }
    auto it = live.ipv4.find(c.netdev);
    if (it == live.ipv4.end()) {
      sel.notes.push_back(label(c) + ": not in this network namespace; skipped");
      continue;
    }
    if (it->second.empty() && !opts.keep_no_ipv4) {
      sel.notes.push_back(label(c) + ": no IPv4 address; skipped");
      continue;
    }
    if (opts.peer && !contains(*opts.peer, c.netdev)) {
      sel.notes.push_back(c.netdev + ": the peer has no rail of that name; skipped");
      continue;
    }
    if (auto b = live.bootstrap.find(c.netdev);
        b != live.bootstrap.end() && !opts.allow_bootstrap) {
      if (included)
        throw Error(c.netdev + ": refusing to select it: it " + b->second +
                    " (pass --allow-bootstrap to select it anyway)");
      sel.notes.push_back(c.netdev + ": " + b->second + "; skipped (--allow-bootstrap selects it)");
      continue;
    }
    SelectedRail r{c.netdev, c.ibdev, c.port, roce_v2_ipv4_gid_index(c, it->second), it->second};
    sel.rails.push_back(std::move(r));
  }
  std::vector<std::string> hcas;
  for (const auto& r : sel.rails) {
    if (r.ibdev.empty()) continue;  // a plain rail: nothing for NCCL's IB transport
    std::string h = r.ibdev + ":" + std::to_string(r.port);
    if (!contains(hcas, h)) hcas.push_back(h);
  }
  for (size_t i = 0; i < hcas.size(); ++i) sel.nccl_ib_hca += (i ? "," : "=") + hcas[i];
  return sel;
}

Selection select_rails(const SelectOptions& opts) {
  std::vector<RdmaNetdev> candidates = enumerate_rdma_netdevs(opts.sysfs_root);
  const size_t rdma_backed = candidates.size();
  // sysfs names a port's netdev by name only, whichever namespace holds it; RDMA netlink reports
  // to this namespace only the netdevs that live here. A device whose port has a netdev of the
  // same name in another namespace (another node's rail on a test host, a container's) is not
  // this namespace's.
  std::vector<std::string> elsewhere;
  if (opts.sysfs_root == "/sys" && !candidates.empty()) {
    std::vector<RdmaPortNetdev> ports;
    try {
      ports = rdma_port_netdevs();
    } catch (const Error&) {
      ports.clear();  // no RDMA netlink: sysfs alone decides, as before
    }
    std::erase_if(candidates, [&](const RdmaNetdev& c) {
      for (const auto& p : ports) {
        if (p.ibdev != c.ibdev || p.port != c.port || p.netdev == c.netdev) continue;
        elsewhere.push_back(c.netdev + ": " + c.ibdev + " port " + std::to_string(c.port) +
                            " has a netdev of that name in another network namespace, not this "
                            "one's; not a candidate here");
        return true;
      }
      return false;
    });
  }
  NlSocket sock;
  CachePtr links = sock.links();
  ObjList addrs = sock.addrs();
  if (opts.allow_plain_rails) {
    // Every other netdev of this namespace but lo, by ifindex order; no ibdev, no GIDs.
    for (nl_object* o = nl_cache_get_first(links.get()); o; o = nl_cache_get_next(o)) {
      const char* name = rtnl_link_get_name(reinterpret_cast<rtnl_link*>(o));
      if (!name || std::string(name) == "lo") continue;
      if (std::none_of(candidates.begin(), candidates.end(),
                       [&](const RdmaNetdev& c) { return c.netdev == name; }))
        candidates.push_back(RdmaNetdev{name, "", 0, {}});
    }
    // A named rail that is not here is skipped with a note, as an absent RDMA-backed one is.
    for (const std::string& name : opts.include)
      if (std::none_of(candidates.begin(), candidates.end(),
                       [&](const RdmaNetdev& c) { return c.netdev == name; }))
        candidates.push_back(RdmaNetdev{name, "", 0, {}});
  }
  LiveView live;
  for (const auto& c : candidates) {
    int ifindex = ifindex_by_name(links.get(), c.netdev);
    if (ifindex == 0) continue;
    auto& v4 = live.ipv4[c.netdev];
    for (const auto& a : capture_addrs(addrs, ifindex)) {
      if (a.at("family") != "inet") continue;
      std::string local = a.at("local");
      v4.push_back(local.substr(0, local.find('/')));
    }
    if (auto why = bootstrap_reason(sock, c.netdev, opts.bootstrap_addrs))
      live.bootstrap[c.netdev] = *why;
  }
  Selection s = select_rails_from(candidates, live, opts);
  s.notes.insert(s.notes.begin(), elsewhere.begin(), elsewhere.end());
  if (opts.sysfs_root == "/sys") {
    const RdmaNetnsMode mode = rdma_netns_mode_here();
    s.rdma_netns_mode = to_string(mode);
    if (mode == RdmaNetnsMode::kExclusive)
      s.notes.push_back(
          "RDMA netns mode: exclusive (an RDMA device is seen only in its own network namespace; "
          "`netns move` moves each rail's RDMA device with it)");
    else if (mode == RdmaNetnsMode::kShared)
      s.notes.push_back(
          "RDMA netns mode: shared (every network namespace sees every RDMA device; `netns move` "
          "moves the netdevs only)");
  }
  if (rdma_backed == 0)
    s.notes.push_back("no RDMA-backed netdev under " + opts.sysfs_root + "/class/infiniband");
  return s;
}

Json selection_to_json(const Selection& s) {
  Json rails = Json::array();
  for (const auto& r : s.rails)
    rails.push_back(Json{{"netdev", r.netdev},
                         {"ibdev", r.ibdev.empty() ? Json(nullptr) : Json(r.ibdev)},
                         {"port", r.ibdev.empty() ? Json(nullptr) : Json(r.port)},
                         {"gid_index", r.gid_index < 0 ? Json(nullptr) : Json(r.gid_index)},
                         {"ipv4", r.ipv4}});
  return Json{
      {"rails", rails},
      {"nccl_ib_hca", s.nccl_ib_hca},
      {"rdma_netns_mode", s.rdma_netns_mode.empty() ? Json(nullptr) : Json(s.rdma_netns_mode)},
      {"notes", s.notes}};
}

std::string selection_to_text(const Selection& s) {
  std::ostringstream out;
  char line[200];
  std::snprintf(line, sizeof(line), "%-16s %-12s %-5s %-9s %s\n", "NETDEV", "IBDEV", "PORT",
                "GID(v2)", "IPV4");
  out << line;
  for (const auto& r : s.rails) {
    std::string v4;
    for (const auto& a : r.ipv4) v4 += (v4.empty() ? "" : ",") + a;
    std::string gid = r.gid_index < 0 ? "-" : std::to_string(r.gid_index);
    const std::string port = r.ibdev.empty() ? "-" : std::to_string(r.port);
    std::snprintf(line, sizeof(line), "%-16s %-12s %-5s %-9s %s\n", r.netdev.c_str(),
                  r.ibdev.empty() ? "-" : r.ibdev.c_str(), port.c_str(), gid.c_str(),
                  v4.empty() ? "-" : v4.c_str());
    out << line;
  }
  out << "NCCL_IB_HCA=" << s.nccl_ib_hca << "\n";
  return out.str();
}

std::vector<std::string> peer_names_from_json(const Json& j, const std::string& origin) {
  std::vector<std::string> names;
  try {
    for (const auto& r : j.at("rails")) names.push_back(r.at("netdev"));
  } catch (const std::exception& e) {
    throw Error("peer list " + origin +
                " is not `gdrproxy netns select --json` output: " + e.what());
  }
  return names;
}

}  // namespace gdrproxy::netns
