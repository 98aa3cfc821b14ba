// Journal-first move of rails into a target namespace (see move.h).
#include "netns/move.h"

#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netlink/route/nexthop.h>

#include <ctime>
#include <filesystem>
#include <optional>
#include <set>

#include "base/error.h"
#include "netns/configure.h"
#include "netns/guard.h"
#include "netns/journal.h"
#include "netns/link_identity.h"
#include "netns/link_ops.h"
#include "netns/profile.h"
#include "netns/rdma_netns.h"
#include "netns/restore.h"
#include "netns/soft_roce.h"
#include "netns/steps.h"
#include "netns/sysctl.h"

namespace gdrproxy::netns {
namespace {

// One dump of the host namespace, shared by every interface's snapshot, with the identities of
// the host's links and the ifindexes the target has already.
struct HostView {
  CachePtr links;
  ObjList addrs, routes, rules;
  std::vector<LinkIdentity> identities;
  CachePtr target_links;
  std::set<int> moved;  // ifindexes of the rails of this move
  RdmaNetnsMode rdma_mode = RdmaNetnsMode::kUnknown;
  std::optional<RdmaNl> rdma;  // this namespace's RDMA netlink, when the kernel has one
};

// What restore will know the rail by (link_identity.h). A rail with no anchor is known by its
// ifindex alone, and the kernel keeps that across the move only where the target has no link of
// that number: such a rail is refused rather than moved to where restore could not tell it from
// a tenant's link.
Json identity_of(const HostView& view, const NetnsFd& target, const std::string& name,
                 int ifindex) {
  for (LinkIdentity id : view.identities) {
    if (id.ifindex != ifindex) continue;
    // A peer that moves too (a veth pair lent whole) goes where its rail goes.
    if (id.link_netns == "origin" && view.moved.count(id.link_ifindex))
      id.link_netns = kPeerIsARail;
    LinkPtr taken(rtnl_link_get(view.target_links.get(), ifindex));
    if (!id.anchored() && taken) {
      throw Error(name + ": refusing to move it: the target network namespace " +
                  target.describe() + " has ifindex " + std::to_string(ifindex) +
                  " already, so the kernel would renumber it, and a " + id.describe() +
                  " has nothing else a tenant cannot forge (no parent device, permanent address "
                  "or peer outside the move) for restore to know it by");
    }
    return id.to_json();
  }
  throw Error(name + ": ifindex " + std::to_string(ifindex) + " vanished while it was read");
}

// Everything `restore` needs about one interface, read before anything changes.
Json snapshot_iface(const NlSocket& hsock, const NlSocket& tsock, const NetnsFd& host,
                    const NetnsFd& target, const HostView& view, const std::string& name,
                    const MoveOptions& opts) {
  LinkPtr link = find_link(hsock, name);
  if (!link) {
    if (find_link(tsock, name))
      throw Error(name + ": already in the target network namespace " + target.describe());
    throw Error(name + ": no such interface in this network namespace (" + host.id().str() +
                "); it may be in another namespace already");
  }
  if (rtnl_link_get_flags(link.get()) & IFF_LOOPBACK)
    throw Error(name + ": refusing to move a loopback interface");
  if (find_link(tsock, name))
    throw Error(name + ": the target network namespace " + target.describe() +
                " already has an interface of that name");
  if (!opts.allow_bootstrap) {
    if (auto why = bootstrap_reason(hsock, name, opts.bootstrap_addrs))
      throw Error(name + ": refusing to move it: it " + *why +
                  " (pass --allow-bootstrap to move it anyway)");
  }
  int ifindex = rtnl_link_get_ifindex(link.get());
  Json rec;
  rec["name"] = name;
  rec["ifindex"] = ifindex;
  rec["identity"] = identity_of(view, target, name, ifindex);
  rec["mac"] = link_mac(link.get());
  rec["mtu"] = rtnl_link_get_mtu(link.get());
  rec["up"] = link_is_up(link.get());
  rec["addrs"] = capture_addrs(view.addrs, ifindex);
  rec["routes"] = capture_routes(view.routes, view.links.get(), ifindex);
  rec["rules"] = capture_rules(view.rules, name, rec["addrs"]);
  Json sysctls = Json::object();
  for (const auto& key : journaled_sysctl_keys()) sysctls[key] = read_conf_sysctl(name, key);
  rec["sysctls"] = sysctls;
  // rxe devices on it: unregistered by the move, made again in the target (soft_roce.h).
  std::vector<std::string> soft;
  std::error_code ec;
  if (!std::filesystem::is_empty("/sys/class/infiniband", ec) && !ec) {
    soft = soft_roce_devices_on(name);
    if (!soft.empty()) rec["soft_roce"] = soft;
  }
  // Its other RDMA devices, which go with it in exclusive RDMA netns mode (rdma_netns.h).
  if (view.rdma_mode == RdmaNetnsMode::kExclusive) {
    Json devs = rdma_devices_on(*view.rdma, ifindex, soft);
    if (!devs.empty()) rec["rdma_devices"] = devs;
  }
  return rec;
}

// Routes all of whose interfaces are among the moved ones: the others cannot exist in the target.
Json routes_for_target(const Json& routes, const std::set<std::string>& moved, std::ostream& log) {
  Json out = Json::array();
  for (const auto& r : routes) {
    bool ok = true;
    for (const auto& h : r.at("nexthops")) ok = ok && moved.count(h.at("ifname"));
    if (ok)
      out.push_back(r);
    else
      log << "note: route " << describe(r) << " also uses an interface that stays; not copied\n";
  }
  return out;
}

}  // namespace

void move_rails(const MoveOptions& opts, std::ostream& log) {
  if (opts.ifaces.empty()) throw Error("no interfaces given (--ifaces)");
  if (opts.journal.empty()) throw Error("no journal file given (--journal)");
  std::set<std::string> moved(opts.ifaces.begin(), opts.ifaces.end());
  if (moved.size() != opts.ifaces.size()) throw Error("an interface is named twice in --ifaces");
  if (std::filesystem::exists(opts.journal))
    throw Error("journal " + opts.journal +
                " already exists: an earlier move was not restored (run `gdrproxy netns "
                "restore --journal " +
                opts.journal + "` first)");

  NetnsFd host = NetnsFd::current();
  NetnsFd target =
      opts.target_pid ? NetnsFd::open_pid(opts.target_pid) : NetnsFd::open_path(opts.target_path);
  if (target.id() == host.id())
    throw Error("target " + target.describe() + " is the current network namespace");
  ArpProfile profile = load_profile(opts.profile, opts.profile_dir);

  NlSocket hsock;
  NlSocket tsock = NlSocket::open_in(target);
  HostView view{hsock.links(),
                hsock.addrs(),
                hsock.routes(),
                hsock.rules(),
                LinkReader().links(),
                tsock.links(),
                {},
                RdmaNetnsMode::kUnknown,
                RdmaNl::open_if_present()};
  if (view.rdma) view.rdma_mode = rdma_netns_mode(*view.rdma);
  const RdmaNetnsMode rdma_mode = view.rdma_mode;
  for (const auto& name : opts.ifaces) view.moved.insert(ifindex_by_name(view.links.get(), name));
  Json ifaces = Json::array();
  unsigned rail = 0;
  for (const auto& name : opts.ifaces) {
    Json rec = snapshot_iface(hsock, tsock, host, target, view, name, opts);
    rec["target_routes"] = source_routing_routes(rec, profile, rail);
    rec["target_rules"] = source_routing_rules(rec, profile, rail);
    ifaces.push_back(std::move(rec));
    ++rail;
  }

  Json target_rec{{"dev", target.id().dev}, {"ino", target.id().ino}};
  if (opts.target_pid)
    target_rec["pid"] = opts.target_pid;
  else
    target_rec["path"] = opts.target_path;
  Json doc{{"format", kJournalFormat},
           {"created_unix", static_cast<long long>(std::time(nullptr))},
           {"host", host_identity()},
           {"origin_netns", {{"dev", host.id().dev}, {"ino", host.id().ino}}},
           {"target", target_rec},
           {"profile", profile.raw},
           {"ifaces", ifaces},
           {"kernel_route_order", kernel_route_order(view.routes, view.links.get(), moved)}};
  if (rdma_mode != RdmaNetnsMode::kUnknown) doc["rdma_netns_mode"] = to_string(rdma_mode);
  write_journal(opts.journal, doc);
  step_done("journal written");
  if (rdma_mode == RdmaNetnsMode::kShared) {
    bool backs = false;
    for (const auto& p : rdma_port_netdevs(*view.rdma))
      backs = backs || (p.ifindex != 0 && view.moved.count(p.ifindex));
    if (backs)
      log << "note: RDMA netns mode is shared: every network namespace sees every RDMA device, so "
             "the rails' RDMA devices stay where they are\n";
  }

  try {
    for (const auto& rec : ifaces) {
      const std::string name = rec["name"];
      LinkPtr link = find_link(hsock, name);
      if (!link) throw Error(name + ": disappeared before it could be moved");
      move_link(hsock, link.get(), target);
      step_done(name + ": moved into " + target.describe());
      if (rec.contains("rdma_devices")) {
        move_rdma_devices(rec, target, log);
        step_done(name + ": RDMA devices moved into " + target.describe());
      }
      configure_link(tsock, rec, log);
      for (const auto& ibdev : rec.value("soft_roce", Json::array())) {
        const std::string dev = ibdev;
        target.run_inside([&] { ensure_soft_roce(dev, name); });
        log << name << ": soft-RoCE device " << dev << " made again on it in " << target.describe()
            << " (rxe does not follow its netdev into a namespace)\n";
        place_soft_roce(dev, name, target, log);
        step_done(name + ": soft-RoCE device " + dev);
      }
    }
    for (const auto& rec : ifaces) {
      const std::string name = rec["name"];
      configure_routes(tsock, routes_for_target(rec["routes"], moved, log), name, false);
      configure_rules(tsock, rec["rules"], name);
    }
    Json sysctls(profile.sysctls);
    for (const auto& rec : ifaces) {
      const std::string name = rec["name"];
      configure_sysctls(target, name, sysctls);
      configure_routes(tsock, rec["target_routes"], name, false);
      configure_rules(tsock, rec["target_rules"], name);
    }
  } catch (const std::exception& e) {
    std::string cause = e.what();
    log << "error: " << cause << "; rolling back\n";
    int problems = restore_from_journal(doc, log);
    if (problems == 0) {
      std::filesystem::remove(opts.journal);
      throw Error(cause + " (rolled back: the host is as before)");
    }
    throw Error(cause + "; rollback left " + std::to_string(problems) +
                " interface(s) unrestored, journal kept at " + opts.journal);
  }
  log << "moved " << ifaces.size() << " interface(s) into " << target.describe()
      << " with ARP profile " << profile.name << "; journal " << opts.journal << "\n";
}

}  // namespace gdrproxy::netns
