// NCCL environment checks (see nccl_env.h).
#include "doctor/nccl_env.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "base/file_io.h"
#include "doctor/nccl_levels.h"
#include "netns/rdma_sysfs.h"

namespace gdrproxy::doctor {
namespace {

std::string join_names(const std::vector<std::string>& v, const std::string& sep = ",") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

void read_conf(const std::string& path, const std::string& origin,
               std::map<std::string, NcclSetting>& out) {
  auto text = read_text(path);
  if (!text) return;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    std::string name = trim(line.substr(0, eq));
    if (name.rfind("NCCL_", 0) != 0) continue;
    out.emplace(name, NcclSetting{trim(line.substr(eq + 1)), origin});  // first one wins
  }
}

bool parse_int(const std::string& s, long& v) {
  if (s.empty() || s.size() > 9) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return false;
  for (size_t k = i; k < s.size(); ++k)
    if (s[k] < '0' || s[k] > '9') return false;
  v = std::stol(s);
  return true;
}

// All GID entries of (ibdev, port), from every netdev of that port.
std::vector<netns::GidEntry> port_gids(const std::vector<netns::RdmaNetdev>& devs,
                                       const std::string& ibdev, unsigned port) {
  std::vector<netns::GidEntry> out;
  for (const auto& d : devs)
    if (d.ibdev == ibdev && d.port == port) out.insert(out.end(), d.gids.begin(), d.gids.end());
  return out;
}

void check_hca(const Context& ctx, const std::map<std::string, NcclSetting>& settings,
               const std::vector<std::string>& hcas, std::vector<std::string>& selected,
               Report& report) {
  selected = hcas;
  auto it = settings.find("NCCL_IB_HCA");
  if (it == settings.end()) {
    report.pass("nccl.ib_hca", "NCCL_IB_HCA not set: NCCL uses every RDMA device (" +
                                   (hcas.empty() ? std::string("none here") : join_names(hcas)) +
                                   ")");
    return;
  }
  const std::string& value = it->second.value;
  NcclDeviceList list = parse_nccl_device_list(value);
  std::set<std::string> chosen;
  std::vector<std::string> missing, overmatch, notes;
  for (const auto& e : list.entries) {
    auto m = nccl_matches(list, e.name, hcas);
    if (m.empty()) {
      missing.push_back(e.name);
      continue;
    }
    const bool names_one = std::find(hcas.begin(), hcas.end(), e.name) != hcas.end();
    if (!list.exact && names_one && m.size() > 1) {
      std::vector<std::string> extra;
      for (const auto& n : m)
        if (n != e.name) extra.push_back(n);
      overmatch.push_back(quote_value(e.name) + " also selects " + join_names(extra));
    }
    if (e.port >= 0)
      for (const auto& n : m)
        if (!is_dir(ctx.sysfs_root + "/class/infiniband/" + n + "/ports/" + std::to_string(e.port)))
          missing.push_back(n + ":" + std::to_string(e.port) + " (no such port)");
    chosen.insert(m.begin(), m.end());
  }
  if (list.exclude) {
    selected.clear();
    for (const auto& h : hcas)
      if (!chosen.count(h)) selected.push_back(h);
  } else {
    selected.assign(chosen.begin(), chosen.end());
  }
  const std::string shown = "NCCL_IB_HCA=" + quote_value(value) + " (" + it->second.origin + ")";
  if (!overmatch.empty()) {
    report.fail("nccl.ib_hca", shown + ": prefix match: " + join_names(overmatch, "; "),
                "write the list with a leading '=' for exact names: NCCL_IB_HCA=" +
                    std::string(list.exclude ? "^" : "") + "=" + join_names([&] {
                      std::vector<std::string> names;
                      for (const auto& e : list.entries) names.push_back(e.name);
                      return names;
                    }()));
  } else if (!missing.empty() && !list.exclude) {
    report.fail("nccl.ib_hca", shown + ": no such RDMA device: " + join_names(missing, ", "),
                "use names from /sys/class/infiniband: " +
                    (hcas.empty() ? std::string("(none here)") : join_names(hcas)));
  } else if (!missing.empty()) {
    report.warn("nccl.ib_hca",
                shown + ": excludes devices that do not exist: " + join_names(missing, ", "),
                "drop the entries or correct them: devices here are " + join_names(hcas));
  } else {
    report.pass("nccl.ib_hca",
                shown + " selects " + (selected.empty() ? "nothing" : join_names(selected)));
  }
}

void check_gid_index(const Context& ctx, const std::map<std::string, NcclSetting>& settings,
                     const std::vector<std::string>& selected, Report& report) {
  auto it = settings.find("NCCL_IB_GID_INDEX");
  long index = -1;
  if (it != settings.end() && !parse_int(it->second.value, index)) {
    report.fail("nccl.ib_gid_index",
                "NCCL_IB_GID_INDEX=" + quote_value(it->second.value) + " is not a number",
                "unset it (NCCL >= 2.21.5 picks the RoCE v2 IPv4 GID) or give an index");
    return;
  }
  std::vector<netns::RdmaNetdev> devs;
  try {
    devs = netns::enumerate_rdma_netdevs(ctx.sysfs_root);
  } catch (const std::exception& e) {
    report.warn("nccl.ib_gid_index", std::string("cannot read the GID tables: ") + e.what(),
                "run on the node (or pass --sysfs-root)");
    return;
  }
  // The RoCE v2 IPv4 index of every selected Ethernet port.
  std::vector<std::string> right, wrong;
  std::set<long> wanted;
  for (const auto& hca : selected) {
    for (const auto& p : list_dir(ctx.sysfs_root + "/class/infiniband/" + hca + "/ports")) {
      const std::string pdir = ctx.sysfs_root + "/class/infiniband/" + hca + "/ports/" + p;
      auto ll = read_text(pdir + "/link_layer");
      if (ll && trim(*ll) == "InfiniBand") continue;
      unsigned port = 0;
      try {
        port = static_cast<unsigned>(std::stoul(p));
      } catch (const std::exception&) {
        continue;
      }
      netns::RdmaNetdev whole;
      whole.ibdev = hca;
      whole.port = port;
      whole.gids = port_gids(devs, hca, port);
      const int best = netns::roce_v2_ipv4_gid_index(whole, {});
      if (best >= 0) wanted.insert(best);
      const std::string where = hca + ":" + p;
      if (index < 0) {
        right.push_back(where + (best >= 0 ? "=" + std::to_string(best) : "=none"));
        if (best < 0) wrong.push_back(where + " has no RoCE v2 IPv4 GID");
        continue;
      }
      const netns::GidEntry* g = nullptr;
      for (const auto& e : whole.gids)
        if (static_cast<long>(e.index) == index) g = &e;
      std::string why;
      if (!g) {
        auto r = read_file(pdir + "/gid_attrs/types/" + std::to_string(index));
        why = r.error == ENOENT ? "no such index" : "an unused slot (or not mapped to this sysfs)";
      } else if (g->type != "RoCE v2") {
        why = quote_value(g->type) + " (not RoCE v2)";
      } else if (g->ipv4.empty()) {
        why = "an IPv6 GID " + g->gid;
      }
      if (why.empty())
        right.push_back(where + "=" + std::to_string(index) + " (" + g->ipv4 + ")");
      else
        wrong.push_back(where + " index " + std::to_string(index) + " is " + why +
                        (best >= 0 ? ", RoCE v2 IPv4 is " + std::to_string(best) : ""));
    }
  }
  const std::string shown =
      it == settings.end()
          ? std::string("NCCL_IB_GID_INDEX not set (auto)")
          : "NCCL_IB_GID_INDEX=" + quote_value(it->second.value) + " (" + it->second.origin + ")";
  std::string fix;
  if (wanted.size() == 1)
    fix = "set NCCL_IB_GID_INDEX=" + std::to_string(*wanted.begin()) +
          " or unset it (NCCL >= 2.21.5 picks RoCE v2 IPv4 per device)";
  else
    fix =
        "unset NCCL_IB_GID_INDEX: the RoCE v2 IPv4 index differs per device and NCCL >= "
        "2.21.5 picks it per device";
  if (!selected.empty() && right.empty() && wrong.empty()) {
    report.pass("nccl.ib_gid_index", shown + ": the selected devices are InfiniBand (no RoCE GID)");
  } else if (selected.empty()) {
    report.warn("nccl.ib_gid_index", shown + ": no RDMA device selected to check",
                "check NCCL_IB_HCA and that RDMA devices are visible in /sys/class/infiniband");
  } else if (!wrong.empty() && index >= 0) {
    report.fail("nccl.ib_gid_index", shown + ": " + join_names(wrong, "; "), fix);
  } else if (!wrong.empty()) {
    report.warn("nccl.ib_gid_index", shown + ": " + join_names(wrong, "; "),
                "give the rail an IPv4 address (the GID table follows the netdev's addresses)");
  } else {
    report.pass("nccl.ib_gid_index", shown + ": RoCE v2 IPv4 on " + join_names(right, ", "));
  }
}

void check_socket_ifname(const Context& ctx, const std::map<std::string, NcclSetting>& settings,
                         Report& report) {
  auto it = settings.find("NCCL_SOCKET_IFNAME");
  if (it == settings.end()) {
    report.pass(
        "nccl.socket_ifname",
        "NCCL_SOCKET_IFNAME not set: NCCL picks an interface (ib* first, then not lo/docker)");
    return;
  }
  const std::vector<std::string> ifs = list_dir(ctx.sysfs_root + "/class/net");
  std::set<std::string> rails;
  try {
    for (const auto& d : netns::enumerate_rdma_netdevs(ctx.sysfs_root)) rails.insert(d.netdev);
  } catch (const std::exception&) {
  }
  NcclDeviceList list = parse_nccl_device_list(it->second.value);
  std::vector<std::string> missing, on_rails, chosen;
  for (const auto& e : list.entries) {
    auto m = nccl_matches(list, e.name, ifs);
    if (m.empty()) missing.push_back(quote_value(e.name));
    for (const auto& n : m) {
      chosen.push_back(n);
      if (rails.count(n) && !list.exclude) on_rails.push_back(n);
    }
  }
  const std::string shown =
      "NCCL_SOCKET_IFNAME=" + quote_value(it->second.value) + " (" + it->second.origin + ")";
  if (!missing.empty() && !list.exclude) {
    report.fail("nccl.socket_ifname", shown + ": no interface matches " + join_names(missing),
                "use an interface of this network namespace: " + join_names(ifs));
  } else if (!on_rails.empty()) {
    report.warn("nccl.socket_ifname", shown + " selects RoCE rail(s) " + join_names(on_rails),
                "point it at the bootstrap interface; rails carry RDMA traffic and move with "
                "their container");
  } else {
    report.pass("nccl.socket_ifname",
                shown + (list.exclude ? " excludes " : " selects ") + join_names(chosen));
  }
}

// NCCL_NET_GDR_LEVEL and NCCL_P2P_LEVEL (or NCCL_P2P_DISABLE) in words; the nvidia family
// compares them with the PCI paths.
void check_levels(const Context& ctx, Report& report) {
  struct Which {
    const char* id;
    NcclLevel level;
    const char* what;
    const char* off;
  };
  for (const auto& w :
       {Which{"nccl.net_gdr_level", net_gdr_level(ctx),
              "GPUDirect RDMA (NIC reads/writes GPU memory)",
              "GPUDirect RDMA off: every network transfer is staged through host memory"},
        Which{"nccl.p2p_level", p2p_level(ctx), "P2P between GPUs of one node",
              "P2P off: GPU-to-GPU traffic on the node goes through host memory"}}) {
    if (!w.level.ignored.empty())
      report.warn(w.id,
                  w.level.ignored +
                      " is neither a path name nor a number: NCCL ignores it and "
                      "keeps PXB",
                  "use LOC, PIX, PXB, PHB or SYS (or 0-4: 0=LOC 1=PIX 2=PXB 3=PHB 4=SYS)");
    else if (w.level.level == NcclPath::LOC && w.level.user_set)
      report.warn(w.id, w.level.shown + ": " + w.off,
                  "unset it unless it works around a known problem (ACS/IOMMU redirecting "
                  "peer-to-peer PCIe)");
    else
      report.pass(w.id, w.level.shown + ": " + w.what + " " + level_words(w.level.level));
  }
}

}  // namespace

std::map<std::string, NcclSetting> nccl_settings(const Context& ctx) {
  std::map<std::string, NcclSetting> out;
  for (const auto& [k, v] : ctx.env)
    if (k.rfind("NCCL_", 0) == 0 && k != "NCCL_VERSION")  // NGC images' label, not a setting
      out.emplace(k, NcclSetting{v, ctx.env_origin});
  if (!ctx.home.empty()) read_conf(ctx.home + "/.nccl.conf", ctx.home + "/.nccl.conf", out);
  read_conf(ctx.etc_root + "/nccl.conf", "/etc/nccl.conf", out);
  return out;
}

NcclDeviceList parse_nccl_device_list(const std::string& value) {
  NcclDeviceList list;
  std::string s = value;
  if (!s.empty() && s[0] == '^') {
    list.exclude = true;
    s.erase(0, 1);
  }
  if (!s.empty() && s[0] == '=') {
    list.exact = true;
    s.erase(0, 1);
  }
  std::istringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    NcclDeviceList::Entry e;
    size_t colon = item.find(':');
    e.name = item.substr(0, colon);
    if (colon != std::string::npos) {
      long port = -1;
      std::string rest = item.substr(colon + 1);
      rest = rest.substr(0, rest.find(':'));
      if (parse_int(rest, port) && port >= 0) e.port = static_cast<int>(port);
    }
    list.entries.push_back(e);
  }
  return list;
}

std::vector<std::string> nccl_matches(const NcclDeviceList& list, const std::string& entry,
                                      const std::vector<std::string>& candidates) {
  std::vector<std::string> out;
  for (const auto& c : candidates)
    if (list.exact ? c == entry : c.compare(0, entry.size(), entry) == 0) out.push_back(c);
  return out;
}

void check_nccl_env(const Context& ctx, Report& report) {
  const auto settings = nccl_settings(ctx);
  std::string shown;
  nlohmann::json facts = nlohmann::json::object();
  for (const auto& [k, s] : settings) {
    shown += (shown.empty() ? "" : ", ") + k + "=" + quote_value(s.value) + " (" + s.origin + ")";
    facts[clean(k)] = clean(s.value);
  }
  report.facts()["nccl_env"] = facts;
  report.pass("nccl.settings", shown.empty() ? "no NCCL_* settings in " + ctx.env_origin +
                                                   ", ~/.nccl.conf or /etc/nccl.conf"
                                             : "NCCL reads " + shown);
  const std::vector<std::string> hcas = list_dir(ctx.sysfs_root + "/class/infiniband");
  std::vector<std::string> selected;
  check_hca(ctx, settings, hcas, selected, report);
  check_gid_index(ctx, settings, selected, report);
  check_socket_ifname(ctx, settings, report);
  check_levels(ctx, report);
}

}  // namespace gdrproxy::doctor
