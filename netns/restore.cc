// Restore from a journal (see restore.h).
#include "netns/restore.h"

#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>

#include "base/error.h"
#include "base/escape.h"
#include "netns/configure.h"
#include "netns/journal.h"
#include "netns/link_identity.h"
#include "netns/link_ops.h"
#include "netns/rdma_netns.h"
#include "netns/soft_roce.h"

namespace gdrproxy::netns {
namespace {

// The target namespace if it still exists and is the very namespace `move` used (a recycled pid
// or a re-created /run/netns name is another namespace).
std::optional<NetnsFd> open_target(const Json& target, std::ostream& log) {
  try {
    NetnsFd ns = target.contains("pid") ? NetnsFd::open_pid(target["pid"].get<pid_t>())
                                        : NetnsFd::open_path(target.at("path"));
    NetnsId want{target.at("dev").get<unsigned long>(), target.at("ino").get<unsigned long>()};
    if (ns.id() == want) return ns;
    log << "note: " << ns.describe() << " is now " << ns.id().str() << ", not the target "
        << want.str() << " of the move: that namespace is gone\n";
  } catch (const Error& e) {
    log << "note: target network namespace is gone (" << e.what() << ")\n";
  }
  return std::nullopt;
}

// Where restore looks for a rail. Every link is read as the host sees it (link_identity.h).
struct Places {
  const NlSocket& hsock;
  const NetnsFd& host;
  const NetnsFd* target;  // null when the target is gone
  const NlSocket* tsock;
  const LinkReader& reader;
  std::optional<int> target_nsid;
  std::vector<std::string> rail_places;  // "origin", and the target's "nsid N"
};

// The one link of `links` that is the device `want` describes: at its ifindex, or, for a device
// with an anchor, at another one (the kernel renumbers a link whose ifindex is taken where it
// moves). Null when there is none; throws when anchors match several.
const LinkIdentity* find_device(const std::vector<LinkIdentity>& links, const LinkIdentity& want,
                                const std::string& name, const std::vector<std::string>& places) {
  for (const auto& l : links)
    if (l.ifindex == want.ifindex && same_device(want, l, places)) return &l;
  if (!want.anchored()) return nullptr;
  const LinkIdentity* found = nullptr;
  for (const auto& l : links) {
    if (!same_device(want, l, places)) continue;
    if (found)
      throw Error(name + ": both " + found->describe() + " and " + l.describe() + " match " +
                  want.describe() + "; neither is touched");
    found = &l;
  }
  return found;
}

LinkPtr link_at(const NlSocket& sock, int ifindex) {
  rtnl_link* link = nullptr;
  if (rtnl_link_get_kernel(sock.get(), ifindex, nullptr, &link) < 0) return nullptr;
  return LinkPtr(link);
}

// A link that holds the rail's name (or nothing) and is not the rail: in the target, a tenant's
// impostor; on the host, someone else's. One line each, and nothing done to it.
int refuse_others(const std::vector<LinkIdentity>& links, const LinkIdentity* real,
                  const LinkIdentity& want, const std::string& name, const std::string& where,
                  std::ostream& log) {
  int refused = 0;
  for (const auto& l : links) {
    if (l.name != name || (real && l.ifindex == real->ifindex)) continue;
    log << "error: " << name << ": refused " << l.describe() << " in " << gdrproxy::printable(where)
        << ": it is not the rail, which is " << want.describe() << "; not touched\n";
    ++refused;
  }
  return refused;
}

// What the rail's peer, outside the tenant, says of a rail that is neither on the host nor in
// the target: where it is now (the tenant hid it), or that the peer is gone too (destroyed).
std::string whereabouts(const Places& p, const LinkIdentity& want) {
  const std::string unknown =
      "it was destroyed with a namespace (a virtual interface is), or the tenant hid it in "
      "another one";
  if (!want.anchored() || want.link_ifindex == 0) return unknown;
  std::vector<LinkIdentity> peers;
  try {
    if (want.link_netns == "origin")
      peers = p.reader.links();
    else if (want.link_netns.rfind("nsid ", 0) == 0)
      peers = p.reader.links(std::stoi(want.link_netns.substr(5)));
  } catch (const std::exception&) {
    return "its peer's namespace (" + want.link_netns + ") is gone, and the rail with it";
  }
  for (const auto& peer : peers) {
    if (peer.ifindex != want.link_ifindex) continue;
    if (peer.link_ifindex == 0) break;
    return "its peer (ifindex " + std::to_string(peer.ifindex) + " in " + want.link_netns +
           ") says it is ifindex " + std::to_string(peer.link_ifindex) + " in " + peer.link_netns +
           ": the tenant hid it there";
  }
  return "its peer (ifindex " + std::to_string(want.link_ifindex) + " in " + want.link_netns +
         ") is gone too: it was destroyed";
}

// Brings the rail of `rec` back to the host, found by its identity, and gives it its name.
// Returns how many other links were refused on the way; throws when the rail cannot be brought
// back.
int bring_back(const Places& p, const Json& rec, std::ostream& log) {
  const std::string name = rec.at("name");
  if (!rec.contains("identity"))
    throw Error(name + ": the journal records no identity for it; not looked for by name or MAC");
  LinkIdentity want = LinkIdentity::from_json(rec["identity"]);
  want.name = name;
  want.mac = rec.value("mac", "");
  const std::string target_where = p.target ? "the target " + p.target->describe() : "";
  const std::vector<LinkIdentity> host_links = p.reader.links();
  const std::vector<LinkIdentity> target_links =
      p.target_nsid ? p.reader.links(p.target_nsid) : std::vector<LinkIdentity>{};
  const LinkIdentity* here = find_device(host_links, want, name, p.rail_places);
  const LinkIdentity* there = here ? nullptr : find_device(target_links, want, name, p.rail_places);
  int refused = refuse_others(host_links, here, want, name, "this network namespace", log) +
                refuse_others(target_links, there, want, name, target_where, log);
  if (!here && !there)
    throw Error(name + ": not found by its identity (" + want.describe() +
                ") in this network namespace nor in " +
                (p.target ? target_where : "the target, which is gone") + ": " +
                whereabouts(p, want));
  const LinkIdentity& found = here ? *here : *there;
  if (found.ifindex != want.ifindex)
    log << name << ": found as ifindex " << found.ifindex << ", journaled " << want.ifindex
        << " (the kernel renumbers a link whose ifindex is taken where it moves)\n";
  int ifindex = found.ifindex;
  if (there) {
    // Back under its journaled ifindex where the target renumbered it and the host has that
    // number free (IFLA_NEW_IFINDEX); else the kernel keeps the one it has, unless taken.
    std::set<int> before;
    for (const auto& l : host_links) before.insert(l.ifindex);
    LinkPtr l(rtnl_link_alloc());
    rtnl_link_set_ifindex(l.get(), there->ifindex);
    if (there->ifindex != want.ifindex && !before.count(want.ifindex))
      move_link_as(*p.tsock, l.get(), p.host, want.ifindex);
    else
      move_link(*p.tsock, l.get(), p.host);
    log << name << ": moved back from " << p.target->describe() << "\n";
    // The check and the move are two requests; a tenant may swap links between them. What
    // arrived is checked again, and sent back if it is not the rail.
    const std::vector<LinkIdentity> now = p.reader.links();
    const LinkIdentity* arrived = find_device(now, want, name, p.rail_places);
    if (!arrived) {
      std::vector<int> came;
      for (const auto& n : now)
        if (!before.count(n.ifindex)) came.push_back(n.ifindex);
      LinkPtr back = came.size() == 1 ? link_at(p.hsock, came[0]) : nullptr;
      if (back) move_link(p.hsock, back.get(), *p.target);
      throw Error(name + ": what came back from " + target_where + " as ifindex " +
                  std::to_string(there->ifindex) + " is not the rail (" + want.describe() +
                  (back ? "); sent back there" : "); it is on the host, unconfigured"));
    }
    ifindex = arrived->ifindex;
    if (ifindex != want.ifindex)
      log << name << ": back as ifindex " << ifindex << ", not its journaled " << want.ifindex
          << " (taken on the host, or a kernel before 6.7)\n";
  }
  LinkPtr link = link_at(p.hsock, ifindex);
  if (!link) throw Error(name + ": ifindex " + std::to_string(ifindex) + " vanished");
  const std::string now = rtnl_link_get_name(link.get());
  if (now != name) {
    // The kernel names an interface it takes back "devN" when the old name is taken.
    if (link_is_up(link.get())) set_up(p.hsock, link.get(), false);
    rename_link(p.hsock, link.get(), name);
    log << name << ": renamed back from " << gdrproxy::quote_text(now) << "\n";
  }
  return refused;
}

// Re-applies MTU, addresses and link state of the interfaces in `order` (the journal's
// kernel_route_order, then the others). The kernel orders routes of equal key by insertion
// (records.h), so from the first interface whose routes are out of place onwards, every
// interface is re-addressed in order, including ones that never left. The check looks at the
// live order, not at what a previous run did, so a restore killed half way is finished by the
// next one.
void readdress_in_order(const NlSocket& hsock, const Json& ifaces, const Json& want,
                        const Json& order, const std::set<std::string>& back, std::ostream& log) {
  CachePtr links = hsock.links();
  std::set<std::string> wanted(want.begin(), want.end());
  Json now_order = kernel_route_order(hsock.routes(), links.get(), wanted);
  size_t in_place = 0;
  while (in_place < want.size() && in_place < now_order.size() &&
         want[in_place] == now_order[in_place])
    ++in_place;
  for (size_t idx = 0; idx < order.size(); ++idx) {
    const std::string name = order[idx];
    if (!back.count(name)) continue;
    const Json* rec = nullptr;
    for (const auto& r : ifaces)
      if (r.at("name") == name) rec = &r;
    LinkPtr link = find_link(hsock, name);
    if (!rec || !link) continue;
    if (idx >= in_place && idx < want.size()) {
      int ifindex = rtnl_link_get_ifindex(link.get());
      Json now = capture_addrs(hsock.addrs(), ifindex);
      bool had = false;
      for (auto it = now.rbegin(); it != now.rend(); ++it) {
        std::string local = it->at("local");
        if (it->at("family") == "inet6" && local.rfind("fe80:", 0) == 0) continue;
        delete_addr(hsock, ifindex, name, *it);
        had = true;
      }
      if (had) log << name << ": re-addressed to restore the original route order\n";
    }
    configure_link(hsock, *rec, log);
  }
}

}  // namespace

int restore_from_journal(const Json& doc, std::ostream& log) {
  NetnsFd host = NetnsFd::current();
  NetnsId origin{doc.at("origin_netns").at("dev").get<unsigned long>(),
                 doc.at("origin_netns").at("ino").get<unsigned long>()};
  if (!(host.id() == origin))
    throw Error("the journal was written in network namespace " + origin.str() +
                "; run restore there (this is " + host.id().str() + ")");
  NlSocket hsock;
  std::optional<NetnsFd> target = open_target(doc.at("target"), log);
  std::optional<NlSocket> tsock;
  if (target) tsock.emplace(NlSocket::open_in(*target));
  const LinkReader reader;
  std::optional<int> target_nsid;
  if (target) target_nsid = reader.nsid_of(*target);
  std::vector<std::string> rail_places{"origin"};
  if (target_nsid) rail_places.push_back("nsid " + std::to_string(*target_nsid));
  const Places places{
      hsock,       host,       target ? &*target : nullptr, tsock ? &*tsock : nullptr, reader,
      target_nsid, rail_places};

  // What move added in the target besides the interfaces themselves: rules. (Routes leave with
  // their interfaces.) Removing them first keeps a living target clean.
  if (tsock) {
    for (const auto& rec : doc.at("ifaces")) {
      for (const char* key : {"target_rules", "rules"}) {
        for (const auto& r : rec.value(key, Json::array())) {
          try {
            delete_rule(*tsock, r);
          } catch (const Error& e) {
            log << "warning: in " << target->describe() << ": " << e.what() << "\n";
          }
        }
      }
    }
  }

  int problems = 0;
  std::set<std::string> back;
  const Json want = doc.value("kernel_route_order", Json::array());
  Json order = want;
  for (const auto& rec : doc.at("ifaces")) {
    if (std::find(order.begin(), order.end(), rec.at("name")) == order.end())
      order.push_back(rec.at("name"));
    // Its RDMA devices first, as rdma-cni gives them back (rdma_netns.h).
    try {
      problems += return_rdma_devices(rec, host, target ? &*target : nullptr, log);
    } catch (const Error& e) {
      log << "error: " << e.what() << "\n";
      ++problems;
    }
    try {
      problems += bring_back(places, rec, log);
      back.insert(rec.at("name"));
    } catch (const Error& e) {
      log << "error: " << e.what() << "\n";
      ++problems;
    }
  }
  try {
    readdress_in_order(hsock, doc.at("ifaces"), want, order, back, log);
  } catch (const Error& e) {
    log << "error: " << e.what() << "\n";
    ++problems;
  }
  for (const auto& rec : doc.at("ifaces")) {
    if (back.count(rec.at("name"))) {
      const std::string name = rec.at("name");
      try {
        configure_routes(hsock, rec.at("routes"), name, true);
        configure_rules(hsock, rec.at("rules"), name);
        configure_sysctls(host, name, rec.at("sysctls"));
        // rxe devices the moves unregistered, made again on the rail here.
        for (const auto& ibdev : rec.value("soft_roce", Json::array())) {
          if (ensure_soft_roce(ibdev.get<std::string>(), name)) {
            log << name << ": soft-RoCE device " << ibdev.get<std::string>()
                << " made again on it (rxe does not follow its netdev into a namespace)\n";
            place_soft_roce(ibdev.get<std::string>(), name, host, log);
          }
        }
      } catch (const Error& e) {
        log << "error: " << e.what() << "\n";
        ++problems;
      }
    } else {
      // Rules outlive their interface; re-adding them is still right.
      try {
        configure_rules(hsock, rec.at("rules"), rec.at("name"));
      } catch (const Error& e) {
        log << "error: " << e.what() << "\n";
      }
    }
  }
  return problems;
}

int restore_command(const std::string& path, std::ostream& log) {
  std::string source = path;
  if (!std::filesystem::exists(path) && std::filesystem::exists(done_path(path))) {
    source = done_path(path);
    log << "note: " << path << " was already restored; checking again from " << source << "\n";
  }
  Json doc = load_journal(source);
  int problems = restore_from_journal(doc, log);
  if (problems == 0 && source == path) {
    if (std::rename(path.c_str(), done_path(path).c_str()) != 0)
      throw_errno("restored, but cannot rename " + path + " to " + done_path(path), errno);
  }
  return problems;
}

}  // namespace gdrproxy::netns
