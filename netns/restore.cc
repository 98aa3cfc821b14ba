// Restore from a journal (see restore.h).
#include "netns/restore.h"

#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>

#include "netns/configure.h"
#include "netns/journal.h"
#include "netns/link_ops.h"
#include "netns/soft_roce.h"
#include "proxy/base/error.h"

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

// Finds the interface of `rec` in `sock`'s namespace: by name if the MAC agrees, else by MAC.
LinkPtr locate(const NlSocket& sock, const Json& rec) {
  const std::string mac = rec.value("mac", "");
  LinkPtr l = find_link(sock, rec.at("name"));
  if (l && (mac.empty() || link_mac(l.get()) == mac)) return l;
  return find_link_by_mac(sock, mac);
}

void bring_back(const NlSocket& hsock, const NetnsFd& host, const NetnsFd* target,
                const NlSocket* tsock, const Json& rec, std::ostream& log) {
  const std::string name = rec.at("name");
  LinkPtr link = locate(hsock, rec);
  if (!link && tsock) {
    if (LinkPtr there = locate(*tsock, rec)) {
      move_link(*tsock, there.get(), host);
      log << name << ": moved back from " << target->describe() << "\n";
      link = locate(hsock, rec);
    }
  }
  if (!link)
    throw Error(name + ": not found in this network namespace nor in the target (MAC " +
                rec.value("mac", "?") +
                "); it no longer exists (a virtual interface is destroyed with its "
                "namespace)");
  const std::string now = rtnl_link_get_name(link.get());
  if (now != name) {
    // The kernel names an interface it takes back "devN" when the old name is taken.
    if (link_is_up(link.get())) set_up(hsock, link.get(), false);
    rename_link(hsock, link.get(), name);
    log << name << ": renamed back from " << now << "\n";
  }
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
    configure_link(hsock, *rec);
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
    try {
      bring_back(hsock, host, target ? &*target : nullptr, tsock ? &*tsock : nullptr, rec, log);
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
          if (ensure_soft_roce(ibdev.get<std::string>(), name))
            log << name << ": soft-RoCE device " << ibdev.get<std::string>()
                << " made again on it (rxe does not follow its netdev into a namespace)\n";
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
