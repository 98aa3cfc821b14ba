// `status`: the node as its state directory and the live system say it is; reads, changes
// nothing, needs no root.
#include <net/if.h>
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "base/escape.h"
#include "harness/output.h"
#include "harness/verbs.h"

namespace gdrproxy::harness {

using gdrproxy::printable;

int status(const Context& c, std::ostream& out) {
  const StatePaths& p = c.id.paths;
  struct stat st {};
  out << "identity: " << printable(identity_line(c.id)) << "\n";
  out << "state: " << printable(p.state)
      << (::stat(p.state.c_str(), &st) == 0 && S_ISDIR(st.st_mode) ? ""
                                                                   : " (absent: nothing prepared)")
      << "\n";
  if (::stat(p.plan.c_str(), &st) == 0) {
    try {
      const Plan plan = load_plan(p.plan);
      out << "plan: " << printable(p.plan) << " (created " << printable(plan.created) << ")\n";
      for (const auto& r : plan.rails) {
        std::string v4;
        for (const auto& a : r.ipv4) v4 += (v4.empty() ? "" : ",") + a;
        out << printable("  rail " + r.netdev + " ibdev " + (r.ibdev.empty() ? "none" : r.ibdev) +
                         " gid " + (r.gid_index ? std::to_string(*r.gid_index) : "-") + " ipv4 " +
                         v4)
            << "\n";
      }
      out << "  NCCL_IB_HCA="
          << printable(plan.nccl_ib_hca.empty() ? "(empty: no ibdev)" : plan.nccl_ib_hca)
          << " NCCL_SOCKET_IFNAME="
          << printable(plan.bootstrap_iface.empty() ? "(none)" : plan.bootstrap_iface) << "\n";
    } catch (const Failure& f) {
      out << "plan: " << printable(p.plan) << " (unreadable: " << printable(f.what()) << ")\n";
    }
  } else {
    out << "plan: none\n";
  }
  if (::lstat(p.journal.c_str(), &st) != 0) {
    out << "run: none (no journal: no rail is moved)\n";
    return 0;
  }
  const auto pids = alive_owner_pids(p);
  if (!pids.empty()) {
    std::string list;
    for (const pid_t x : pids) list += (list.empty() ? "" : " ") + std::to_string(x);
    out << "run: alive (harness pid " << list << ")\n";
  } else {
    out << "run: not alive, but its journal is present: rails still moved (run " << kProg
        << " teardown)\n";
  }
  out << "journal: " << printable(p.journal) << "\n";
  std::ifstream in(p.journal);
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_object() && j.contains("ifaces") && j["ifaces"].is_array())
    for (const auto& i : j["ifaces"]) {
      if (!i.is_object() || !i.contains("name") || !i["name"].is_string()) continue;
      const std::string name = i["name"];
      out << "  moved rail " << printable(name) << ": "
          << (::if_nametoindex(name.c_str()) != 0 ? "on the host now" : "in the container") << "\n";
    }
  return 0;
}

}  // namespace gdrproxy::harness
