// --peer comparison (see peer.h).
#include "doctor/peer.h"

#include <fstream>
#include <set>

#include "base/lists.h"
#include "doctor/report.h"

namespace gdrproxy::doctor {
namespace {

using Json = nlohmann::json;

const Json* member(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::string str(const Json& j, const char* key) {
  const Json* m = member(j, key);
  if (!m) return "";
  return m->is_string() ? m->get<std::string>() : m->dump();
}

// "name port link_layer rate" per HCA port.
std::set<std::string> hca_ports(const Json* hcas) {
  std::set<std::string> out;
  if (!hcas || !hcas->is_array()) return out;
  for (const auto& h : *hcas) {
    const Json* ports = member(h, "ports");
    if (!ports || !ports->is_array()) continue;
    for (const auto& p : *ports)
      out.insert(str(h, "name") + ":" + str(p, "port") + " " + str(p, "link_layer") + " " +
                 str(p, "rate"));
  }
  return out;
}

// File names of every mapped library, over all pids of a report.
std::set<std::string> library_files(const Json* libs) {
  std::set<std::string> out;
  if (!libs || !libs->is_object()) return out;
  for (const auto& [pid, stems] : libs->items()) {
    if (!stems.is_object()) continue;
    for (const auto& [stem, files] : stems.items())
      if (files.is_array())
        for (const auto& f : files)
          if (f.is_string()) out.insert(f.get<std::string>());
  }
  return out;
}

std::set<std::string> minus(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::set<std::string> out;
  for (const auto& s : a)
    if (!b.count(s)) out.insert(s);
  return out;
}

}  // namespace

void compare_facts(const Json& mine, const Json& theirs, const std::string& peer_name,
                   Report& report) {
  const std::string them = "peer " + peer_name;
  // Rails: how many, and the GID index each would use.
  const Json* r1 = member(mine, "rails");
  const Json* r2 = member(theirs, "rails");
  if (!r1 || !r2 || !r1->is_array() || !r2->is_array()) {
    report.warn("peer.rails", "rails not recorded on both nodes", "run both reports with rdma");
  } else if (r1->size() != r2->size()) {
    report.fail(
        "peer.rails",
        std::to_string(r1->size()) + " rails here, " + std::to_string(r2->size()) + " on " + them,
        "give every node the same number of rails (NCCL pairs them by index)");
  } else {
    std::set<std::string> g1, g2;
    for (const auto& r : *r1) g1.insert(str(r, "gid_index"));
    for (const auto& r : *r2) g2.insert(str(r, "gid_index"));
    if (g1 != g2)
      report.warn("peer.rails",
                  "same rail count, RoCE v2 GID indices differ: here " + join_list(g1) + ", " +
                      them + " " + join_list(g2),
                  "leave NCCL_IB_GID_INDEX unset (NCCL >= 2.21.5 picks per device)");
    else
      report.pass("peer.rails",
                  std::to_string(r1->size()) + " rails on both, GID index " + join_list(g1));
  }
  // HCAs: ports, link layer, rate.
  const auto h1 = hca_ports(member(mine, "hcas")), h2 = hca_ports(member(theirs, "hcas"));
  if (!member(mine, "hcas") || !member(theirs, "hcas"))
    report.warn("peer.hcas", "HCAs not recorded on both nodes", "run both reports with rdma");
  else if (h1 == h2)
    report.pass("peer.hcas", std::to_string(h1.size()) + " HCA ports alike");
  else
    report.warn("peer.hcas",
                "only here: " + join_list(minus(h1, h2)) + "; only on " + them + ": " +
                    join_list(minus(h2, h1)),
                "use the same NICs, firmware link settings and NCCL_IB_HCA names on every node");
  // Libraries: the same file names (versions) where both recorded a process.
  const Json* l1 = member(mine, "libraries");
  const Json* l2 = member(theirs, "libraries");
  if (!l1 || !l2) {
    report.warn("peer.libraries", "libraries not recorded on both nodes",
                "run both reports with --pid of a rank");
  } else {
    const auto f1 = library_files(l1), f2 = library_files(l2);
    const auto a = minus(f1, f2), b = minus(f2, f1);
    if (a.empty() && b.empty())
      report.pass("peer.libraries", "the same library files: " + join_list(f1));
    else
      report.fail("peer.libraries",
                  "only here: " + join_list(a) + "; only on " + them + ": " + join_list(b),
                  "run one image (the same NCCL, UCX, libfabric, NIXL) on every node");
  }
  // Boot ids: two nodes must differ; the same id under two hostnames is one kernel (the same
  // node twice, or containers with a copied fake boot_id), which NCCL takes for one host.
  const Json* b1 = member(mine, "host");
  const Json* b2 = member(theirs, "host");
  const std::string id1 = b1 ? str(*b1, "boot_id") : "", id2 = b2 ? str(*b2, "boot_id") : "";
  const std::string host1 = b1 ? str(*b1, "hostname") : "", host2 = b2 ? str(*b2, "hostname") : "";
  if (id1.empty() || id2.empty())
    report.warn("peer.boot_id", "boot id not recorded on both nodes",
                "run both reports with the container family");
  else if (id1 != id2)
    report.pass("peer.boot_id", "different boot ids, as two nodes have");
  else if (host1 != host2)
    report.warn("peer.boot_id",
                "the same boot id " + quote_value(id1) + " here (" + host1 + ") and on " + them +
                    ": one kernel under two hostnames, or a copied fake boot_id; NCCL hashes "
                    "hostname + boot id, so real nodes must differ",
                "compare reports from two different nodes; remove fake boot_id mounts");
  else
    report.warn("peer.boot_id", "the peer report is from this same boot of " + host1,
                "pass the report of the other node");
  // NCCL settings.
  const Json* n1 = member(mine, "nccl_env");
  const Json* n2 = member(theirs, "nccl_env");
  if (!n1 || !n2 || !n1->is_object() || !n2->is_object()) {
    report.warn("peer.nccl_env", "NCCL settings not recorded on both nodes",
                "run both reports with the nccl family");
  } else {
    std::set<std::string> diff;
    for (const auto& [k, v] : n1->items())
      if (!n2->contains(k) || (*n2)[k] != v) diff.insert(k);
    for (const auto& [k, v] : n2->items())
      if (!n1->contains(k)) diff.insert(k);
    if (diff.empty())
      report.pass("peer.nccl_env", std::to_string(n1->size()) + " NCCL settings alike");
    else
      report.warn("peer.nccl_env", "NCCL settings differ: " + join_list(diff),
                  "set NCCL_* the same way on every node (the launcher's environment, not "
                  "per-node files)");
  }
}

void check_peer(const Context& ctx, Report& report) {
  if (ctx.peer.empty()) return;
  std::ifstream in(ctx.peer);
  Json j;
  try {
    if (!in) throw std::runtime_error("cannot open");
    j = Json::parse(in);
  } catch (const std::exception& e) {
    report.fail("peer.file", quote_value(ctx.peer) + ": " + e.what(),
                "pass the output of `gdrproxy doctor --json` on the other node");
    return;
  }
  if (!j.is_object() || str(j, "schema") != "gdrproxy.doctor" || !member(j, "facts")) {
    report.fail("peer.file", quote_value(ctx.peer) + " is not a gdrproxy doctor report",
                "pass the output of `gdrproxy doctor --json` on the other node");
    return;
  }
  std::string name = ctx.peer;
  if (const Json* host = member(j["facts"], "host")) {
    const std::string h = str(*host, "hostname");
    if (!h.empty()) name = h;
  }
  compare_facts(report.facts(), j["facts"], clean(name), report);
}

}  // namespace gdrproxy::doctor
