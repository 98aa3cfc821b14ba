// `prepare`: the node's plan. The idea not to miss: no selection rule lives here, they are all
// `netns select`'s (called in this process); prepare only maps the variables users know onto
// its options, checks what a run will need (IPv4 on every rail, a bootstrap interface that is
// not a rail) and writes what it chose.
#include <net/if.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/escape.h"
#include "base/lists.h"
#include "harness/output.h"
#include "harness/spawn.h"
#include "harness/verbs.h"
#include "netns/select.h"
#include "sysfs/builder.h"
#include "sysfs/capture.h"
#include "sysfs/mount_plan.h"
#include "sysfs/selection.h"

namespace gdrproxy::harness {
namespace {

namespace fs = std::filesystem;
using gdrproxy::printable;

// The interface of the IPv4 default route (the first one `ip -4 route show default` lists).
std::string default_route_iface() {
  std::string out;
  run_capturing({{"ip", "-4", "route", "show", "default"}, ChildOutput::kDiscard}, out);
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string w, prev;
    while (words >> w) {
      if (prev == "dev") return w;
      prev = w;
    }
  }
  return {};
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// A value a shell reads back as it is: bare when it needs no quoting, else $'...' with every
// byte outside printable ASCII (and ' and \) as \xHH.
std::string shell_word(const std::string& s) {
  if (!s.empty() && std::all_of(s.begin(), s.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || std::strchr("._@+,-", ch);
      }))
    return s;
  std::string out = "$'";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      out += ch;
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out + "'";
}

void print_summary(const Identity& id, const Plan& plan, const std::string& path,
                   std::ostream& out) {
  char line[512];
  out << "\n=== gdr-harness plan: " << printable(identity_line(id)) << " ===\n";
  std::snprintf(line, sizeof line, "%-16s %-12s %-5s %-6s %s\n", "NETDEV", "IBDEV", "PORT", "GID",
                "IPV4");
  out << line;
  std::vector<std::string> plain;
  std::set<std::string> gids;
  for (const auto& r : plan.rails) {
    const std::string v4 = join_list(r.ipv4);
    std::snprintf(line, sizeof line, "%-16s %-12s %-5s %-6s %s\n", printable(r.netdev).c_str(),
                  r.ibdev.empty() ? "none" : printable(r.ibdev).c_str(),
                  r.port ? std::to_string(*r.port).c_str() : "-",
                  r.gid_index ? std::to_string(*r.gid_index).c_str() : "-",
                  v4.empty() ? "-" : printable(v4).c_str());
    out << line;
    if (r.ibdev.empty())
      plain.push_back(r.netdev);
    else
      gids.insert(r.ibdev + "=" + (r.gid_index ? std::to_string(*r.gid_index) : "none"));
  }
  if (!plain.empty())
    out << "ibdev: none for " << printable(join_list(plain))
        << " (plain rails: no RDMA device backs them)\n";
  out << "GID index per HCA: "
      << (gids.empty() ? "none (no rail has an RDMA device)" : printable(join_list(gids, " ")))
      << "\n";
  if (!plan.nccl_ib_hca.empty())
    out << "NCCL_IB_HCA=" << printable(plan.nccl_ib_hca) << "\n";
  else
    out << "NCCL_IB_HCA: empty (ibdev: none on every rail; NCCL will not use NET/IB over these "
           "rails)\n";
  out << "NCCL_SOCKET_IFNAME=" << printable(plan.bootstrap_iface) << "\n";
  out << "synthetic sysfs: "
      << (!plan.sysfs_tree.empty() ? printable(plan.sysfs_tree)
          : !plan.ibdevs().empty() ? "none (soft-RoCE devices: no PCI function to model)"
                                   : "none (no RDMA device among the rails)")
      << "\n";
  out << "plan: " << printable(path) << "\n";
  out << "Give the other node (copy-paste):\n";
  out << "RDMA_PEER_IFACES=" << shell_word(join_list(plan.netdevs())) << "\n";
}

// `gdrproxy doctor --json` on the prepared node, with the NCCL environment the plan gives runs,
// kept as <state>/doctor.json (DEBUG_ALL runs copy it to their debug files). Its verdict is a
// line, not prepare's status: the rails are checked before a run moves them, and `gdrproxy
// doctor` prints every finding with its fix.
void node_doctor(const Context& c, const Plan& plan, std::ostream& out) {
  const std::string& st = c.id.paths.state;
  Spawn s{{c.gdrproxy, "doctor", "--json", "--arp-profile", c.arp_profile},
          ChildOutput::kDiscard,
          "",
          {},
          30};
  s.env_remove = {"NCCL_IB_HCA", "NCCL_SOCKET_IFNAME"};
  if (!plan.nccl_ib_hca.empty()) s.env_add.push_back("NCCL_IB_HCA=" + plan.nccl_ib_hca);
  if (!plan.bootstrap_iface.empty())
    s.env_add.push_back("NCCL_SOCKET_IFNAME=" + plan.bootstrap_iface);
  std::string report, err;
  const int rc = run_capturing(s, report, &err);
  const auto j = nlohmann::json::parse(report, nullptr, false);
  if (rc > 2 || j.is_discarded() || !j.is_object() || j.value("schema", "") != "gdrproxy.doctor") {
    say("doctor: gdrproxy doctor --json failed (status " + std::to_string(rc) +
        "): " + err.substr(0, 300));
    return;
  }
  {
    std::ofstream f(st + "/doctor.json", std::ios::trunc);
    f << report;
  }
  int pass = 0, warn = 0, fail = 0;
  if (j.contains("checks") && j["checks"].is_array())
    for (const auto& ch : j["checks"]) {
      const std::string v = ch.value("status", "");
      pass += v == "PASS";
      warn += v == "WARN";
      fail += v == "FAIL";
    }
  out << "doctor: " << printable(j.value("status", "?")) << " (" << pass << " pass, " << warn
      << " warn, " << fail << " fail); report " << printable(st + "/doctor.json")
      << "; details: gdrproxy doctor\n";
}

}  // namespace

int prepare(const Context& c, std::ostream& out) {
  need_root("prepare");
  const Identity& id = c.id;
  const StatePaths& p = id.paths;
  const Environment& env = c.env;
  if (!id.local_rank.empty() && id.local_rank != "0") {
    say(identity_line(id) + ": local rank " + id.local_rank +
        " has nothing to do (local rank 0 prepares this node)");
    return 0;
  }
  struct stat jst {};
  if (::lstat(p.journal.c_str(), &jst) == 0) {
    if (!alive_owner_pids(p).empty())
      throw Failure("a run holds this node's rails (journal " + p.journal +
                    "); stop it before prepare");
    throw Failure("a killed run left rails moved (journal " + p.journal + "); run '" +
                  std::string(kProg) + " teardown' first");
  }
  say("preparing " + identity_line(id) + "; state " + p.state);

  const auto include = split_list(env_or(env, "RDMA_IFACES", ""));
  for (const auto& n : include)
    if (n.size() > 15 || n.find('/') != std::string::npos ||
        n.find_first_of(" \t\n\r\f\v") != std::string::npos)
      throw Failure("RDMA_IFACES: '" + n + "' is not a valid interface name");
  const bool peer_set = env.count("RDMA_PEER_IFACES") > 0;
  if (peer_set) {
    const std::string v = env.at("RDMA_PEER_IFACES");
    say("peer rails (RDMA_PEER_IFACES): " + (v.empty() ? std::string("<none>") : v));
  }

  // The rails: netns select, with the user's rules as its options. Netdevs no RDMA device backs
  // (veths of a test rig) are candidates when RDMA_IFACES names them, or all of them with
  // RDMA_PLAIN_RAILS=1: `ibdev: none`, never in NCCL_IB_HCA.
  netns::SelectOptions so;
  const auto ex = env.find("RDMA_EXCLUDE_REGEX");
  so.exclude_regex = ex != env.end() ? ex->second : "^eth[0-9]+$";
  so.include = include;
  so.keep_no_ipv4 = !env_true(env, "RDMA_AUTO_SKIP_NO_IPV4");
  if (peer_set) so.peer = split_list(env.at("RDMA_PEER_IFACES"));
  so.allow_bootstrap = env_true(env, "ALLOW_BOOTSTRAP_RDMA_IFACE");
  so.allow_plain_rails = !include.empty() || env_true(env, "RDMA_PLAIN_RAILS");
  if (so.allow_plain_rails && include.empty())
    say("RDMA_PLAIN_RAILS=1: every netdev here but lo is a candidate rail");
  std::string words = "netns select --json --exclude " + so.exclude_regex;
  if (!include.empty()) words += " --include " + join_list(include);
  if (so.keep_no_ipv4) words += " --keep-no-ipv4";
  if (so.peer) words += " --peer " + join_list(*so.peer);
  if (so.allow_bootstrap) words += " --allow-bootstrap";
  if (so.allow_plain_rails) words += " --allow-plain-rails";
  say("selecting: gdrproxy " + words);
  netns::Selection sel;
  try {
    sel = netns::select_rails(so);
  } catch (const std::exception& e) {
    std::string why = e.what();
    if (why.find("--allow-bootstrap") != std::string::npos)
      why += " (here: ALLOW_BOOTSTRAP_RDMA_IFACE=1)";
    throw Failure("gdrproxy netns select failed: " + why);
  }
  for (const auto& n : sel.notes) say("  " + n);

  Plan plan;
  std::set<std::string> hca;
  std::vector<std::string> no_ipv4;
  for (const auto& r : sel.rails) {
    PlanRail pr{r.netdev, r.ibdev, std::nullopt, std::nullopt, r.ipv4};
    if (!r.ibdev.empty()) {
      pr.port = r.port;
      hca.insert(r.ibdev + ":" + std::to_string(r.port));
    }
    if (r.gid_index >= 0) pr.gid_index = r.gid_index;
    if (r.ipv4.empty()) no_ipv4.push_back(r.netdev);
    plan.rails.push_back(std::move(pr));
  }
  if (plan.rails.empty())
    throw Failure("no rail selected on node " + id.node +
                      " (the lines above say why each candidate was dropped)",
                  3);
  if (!no_ipv4.empty())
    throw Failure("rail(s) " + join_list(no_ipv4) +
                  ": no IPv4 address (RoCE v2 needs one): give them one, leave them out of "
                  "RDMA_IFACES, or set RDMA_AUTO_SKIP_NO_IPV4=1 to skip them");
  std::string boot = env_or(env, "GDR_HARNESS_BOOTSTRAP_IFACE", "");
  if (boot.empty()) boot = default_route_iface();
  for (const auto& r : plan.rails)
    if (!boot.empty() && r.netdev == boot)
      throw Failure(boot +
                    " is both a rail and the bootstrap interface; set "
                    "GDR_HARNESS_BOOTSTRAP_IFACE to another interface");
  if (!boot.empty() && ::if_nametoindex(boot.c_str()) == 0)
    throw Failure("GDR_HARNESS_BOOTSTRAP_IFACE: no interface '" + boot +
                  "' in this network namespace");
  if (!hca.empty()) plan.nccl_ib_hca = "=" + join_list(hca);
  plan.bootstrap_iface = boot;

  std::error_code ec;
  fs::create_directories(p.state, ec);
  ::chmod(p.state.c_str(), 0700);
  // Synthetic sysfs, for the RDMA devices of the selected rails only. Soft-RoCE devices (rxe)
  // hang off no PCI function: the synthetic sysfs cannot place them, so a plan with one has none.
  fs::remove_all(p.state + "/sysfs", ec);
  const auto ibdevs = plan.ibdevs();
  std::vector<std::string> virt;
  for (const auto& n : ibdevs)
    if (!fs::exists("/sys/class/infiniband/" + n + "/device", ec)) virt.push_back(n);
  if (!virt.empty()) {
    say(join_list(virt) +
        ": no PCI function (soft-RoCE): no synthetic sysfs; the container gets a fresh sysfs of "
        "its own network namespace");
  } else if (!ibdevs.empty()) {
    const std::string nics = join_list(ibdevs), dir = p.state + "/sysfs";
    say("synthetic sysfs for " + nics +
        ": gdrproxy sysfs snapshot / build --live-ports / mount-plan");
    fs::create_directories(dir, ec);
    sysfs::SelectionRequest req;
    req.nics_given = true;
    req.nics = ibdevs;
    sysfs::Snapshot snap;
    try {
      snap = sysfs::capture("/");
      sysfs::save_snapshot(snap, dir + "/snapshot.json");
    } catch (const std::exception& e) {
      throw Failure(std::string("gdrproxy sysfs snapshot failed: ") + e.what());
    }
    try {
      const auto s = sysfs::select(snap, req);
      sysfs::build_tree(snap, s, {dir + "/tree", false, true});
      std::ofstream mp(dir + "/mount-plan.json", std::ios::trunc);
      mp << sysfs::to_json(sysfs::make_mount_plan(snap, s, dir + "/tree", "/")).dump(2) << "\n";
      if (!mp) throw Failure("cannot write " + dir + "/mount-plan.json");
    } catch (const Failure&) {
      throw;
    } catch (const std::exception& e) {
      throw Failure("gdrproxy sysfs build --nics " + nics + " failed: " + e.what());
    }
    plan.sysfs_tree = dir + "/tree";
    plan.sysfs_mount_plan = dir + "/mount-plan.json";
  } else {
    say("no RDMA device among the rails: no synthetic sysfs (the container gets a fresh sysfs of "
        "its own network namespace)");
  }

  plan.node = id.node;
  plan.host = id.host;
  plan.created = utc_now();
  plan.launcher = id.launcher;
  plan.rank = id.rank;
  plan.local_rank = id.local_rank;
  plan.node_index = id.node_index;
  auto raw = [&env](const char* name, const char* fallback = "") {
    const auto it = env.find(name);
    return it != env.end() ? it->second : std::string(fallback);
  };
  plan.env = {{"RDMA_IFACES", raw("RDMA_IFACES")},
              {"RDMA_EXCLUDE_REGEX", raw("RDMA_EXCLUDE_REGEX", "^eth[0-9]+$")},
              {"RDMA_PEER_IFACES", raw("RDMA_PEER_IFACES")},
              {"RDMA_AUTO_SKIP_NO_IPV4", raw("RDMA_AUTO_SKIP_NO_IPV4")},
              {"ALLOW_BOOTSTRAP_RDMA_IFACE", raw("ALLOW_BOOTSTRAP_RDMA_IFACE")},
              {"RDMA_PLAIN_RAILS", raw("RDMA_PLAIN_RAILS")}};
  save_plan(plan, p.plan);
  say("plan written: " + p.plan);
  print_summary(id, plan, p.plan, out);
  node_doctor(c, plan, out);
  return 0;
}

}  // namespace gdrproxy::harness
