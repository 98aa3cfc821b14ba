// RDMA checks (see rdma.h).
#include "doctor/rdma.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <climits>

#include "base/file_io.h"
#include "doctor/rdma_netlink.h"
#include "doctor/verbs_providers.h"
#include "netns/profile.h"
#include "netns/rdma_sysfs.h"

namespace gdrproxy::doctor {
namespace {

std::string attr(const std::string& path) {
  auto t = read_text(path);
  return t ? trim(*t) : "";
}

void check_abi(const Context& ctx, Report& report) {
  const std::string path = ctx.sysfs_root + "/class/infiniband_verbs/abi_version";
  auto r = read_file(path);
  if (!r.data) {
    report.warn("rdma.uverbs_abi", "no " + path + " (ib_uverbs not loaded, or no RDMA here)",
                "modprobe ib_uverbs (and the NIC's RDMA driver)");
    return;
  }
  const std::string v = trim(*r.data);
  // rdma-core's libibverbs accepts kernel uverbs ABI 3 to 6; everything it needs is in 6.
  if (v == "6") {
    report.pass("rdma.uverbs_abi", "uverbs ABI 6");
  } else if (v == "3" || v == "4" || v == "5") {
    report.warn("rdma.uverbs_abi", "uverbs ABI " + quote_value(v) + ": old, without the ioctl API",
                "use a kernel with uverbs ABI 6");
  } else {
    report.fail("rdma.uverbs_abi", "uverbs ABI " + quote_value(v) + ": libibverbs accepts 3 to 6",
                "use a kernel with uverbs ABI 6");
  }
}

// Per device: its driver ABI against the range of the provider that will claim it.
void check_provider_abi(const Context& ctx, Report& report) {
  const std::string cls = ctx.sysfs_root + "/class/infiniband_verbs";
  for (const auto& name : list_dir(cls)) {
    if (name.rfind("uverbs", 0) != 0) continue;
    const std::string ibdev = attr(cls + "/" + name + "/ibdev");
    const std::string id = "rdma.provider_abi." + (ibdev.empty() ? name : ibdev);
    // The kernel driver of the device's parent, as libibverbs' modalias match sees it.
    std::string driver;
    for (const std::string& link :
         {ctx.sysfs_root + "/class/infiniband/" + ibdev + "/device/driver",
          cls + "/" + name + "/device/driver"})
      if (auto l = read_link(link); l && driver.empty()) driver = basename_of(*l);
    const std::string abi_text = attr(cls + "/" + name + "/abi_version");
    const std::string where = name + "=" + ibdev;
    const ProviderMatch m = match_verbs_provider(driver, ibdev);
    if (!m.provider) {
      report.warn(id,
                  where + " (driver " + (driver.empty() ? std::string("unknown") : driver) +
                      "): no rdma-core provider known to the doctor, its ABI range cannot be "
                      "checked",
                  "check `ibv_devices` lists it; a provider missing from the image's "
                  "ibverbs-providers shows the same way");
      continue;
    }
    long abi = -1;
    try {
      abi = abi_text.empty() ? -1 : std::stol(abi_text);
    } catch (const std::exception&) {
      abi = -1;
    }
    const std::string range =
        std::to_string(m.provider->min_abi) +
        (m.provider->max_abi == m.provider->min_abi
             ? std::string()
             : " to " + (m.provider->max_abi == INT_MAX ? std::string("any")
                                                        : std::to_string(m.provider->max_abi)));
    const std::string shown = where + " (" + m.how + ", provider " + m.provider->name +
                              " accepts driver ABI " + range + ")";
    if (abi < 0)
      report.warn(id, shown + ": abi_version " + quote_value(abi_text) + " unreadable",
                  "read " + cls + "/" + name + "/abi_version on the node");
    else if (abi < m.provider->min_abi || abi > m.provider->max_abi)
      report.fail(id,
                  shown + ": the device's driver ABI is " + std::to_string(abi) +
                      "; libibverbs skips the device (\"does not support the kernel ABI\")",
                  std::string("use an rdma-core whose ") + m.provider->name +
                      " provider supports ABI " + std::to_string(abi) +
                      " (the image's ibverbs-providers), or a kernel driver of its range");
    else
      report.pass(id, shown + ": driver ABI " + std::to_string(abi));
  }
}

void check_nodes(const Context& ctx, Report& report) {
  const std::string cls = ctx.sysfs_root + "/class/infiniband_verbs";
  std::vector<std::string> good, bad;
  for (const auto& name : list_dir(cls)) {
    if (name.rfind("uverbs", 0) != 0) continue;
    const std::string dev = attr(cls + "/" + name + "/dev");
    const std::string ibdev = attr(cls + "/" + name + "/ibdev");
    unsigned maj = 0, min = 0;
    char extra = 0;
    if (std::sscanf(dev.c_str(), "%u:%u%c", &maj, &min, &extra) != 2) {
      bad.push_back(name + ": sysfs dev " + quote_value(dev) + " unreadable");
      continue;
    }
    const std::string node = ctx.dev_root + "/infiniband/" + name;
    struct stat st {};
    if (::stat(node.c_str(), &st) != 0) {
      bad.push_back(node + " missing (" + ibdev + " is " + dev + ")");
    } else if (!S_ISCHR(st.st_mode)) {
      bad.push_back(node + " is not a character device");
    } else if (major(st.st_rdev) != maj || minor(st.st_rdev) != min) {
      bad.push_back(node + " is " + std::to_string(major(st.st_rdev)) + ":" +
                    std::to_string(minor(st.st_rdev)) + ", sysfs says " + ibdev + " is " + dev);
    } else {
      good.push_back(name + "=" + ibdev + " (" + dev + ")");
    }
  }
  std::string g;
  for (const auto& s : good) g += (g.empty() ? "" : ", ") + s;
  if (!bad.empty()) {
    std::string b;
    for (const auto& s : bad) b += (b.empty() ? "" : "; ") + s;
    report.fail(
        "rdma.uverbs_nodes", b,
        "create /dev/infiniband nodes with the numbers in /sys/class/infiniband_verbs/*/dev "
        "(a container must get the host's numbers)");
  } else if (good.empty()) {
    report.warn("rdma.uverbs_nodes", "no uverbs device in " + cls,
                "load the NIC's RDMA driver, or grant the container an RDMA device");
  } else {
    report.pass("rdma.uverbs_nodes", g);
  }
}

long read_sysctl(const Context& ctx, const std::string& iface, const std::string& key) {
  const std::string t = attr(ctx.proc_root + "/sys/net/ipv4/conf/" + iface + "/" + key);
  try {
    return t.empty() ? -1 : std::stol(t);
  } catch (const std::exception&) {
    return -1;
  }
}

void check_rails(const Context& ctx, Report& report) {
  std::vector<netns::RdmaNetdev> devs;
  try {
    devs = netns::enumerate_rdma_netdevs(ctx.sysfs_root);
  } catch (const std::exception& e) {
    report.warn("rdma.rails", e.what(), "run on the node (or pass --sysfs-root)");
    return;
  }
  nlohmann::json rails = nlohmann::json::array();
  if (devs.empty()) {
    report.warn("rdma.rails", "no RDMA-backed netdev in " + ctx.sysfs_root + "/class/infiniband",
                "move the rails into this network namespace (gdrproxy netns move) or load the "
                "RDMA driver");
    report.facts()["rails"] = rails;
    return;
  }
  std::optional<netns::ArpProfile> profile;
  std::string profile_error;
  try {
    profile = netns::load_profile(ctx.arp_profile, ctx.arp_profile_dir);
  } catch (const std::exception& e) {
    profile_error = e.what();
  }
  for (const auto& d : devs) {
    const std::string id = "rdma.rail." + d.netdev;
    const std::string where = d.netdev + " (" + d.ibdev + ":" + std::to_string(d.port) + ")";
    const std::vector<std::string> v4 =
        ctx.ipv4_of ? ctx.ipv4_of(d.netdev) : std::vector<std::string>{};
    std::string addrs;
    for (const auto& a : v4) addrs += (addrs.empty() ? "" : ",") + a;
    if (v4.empty())
      report.fail(id + ".ipv4", where + " has no IPv4 address",
                  "give the rail its address (gdrproxy netns move carries it into the namespace)");
    else
      report.pass(id + ".ipv4", where + " has " + addrs);

    const int gid = netns::roce_v2_ipv4_gid_index(d, v4);
    bool gid_matches = false;
    for (const auto& g : d.gids)
      if (static_cast<int>(g.index) == gid)
        gid_matches = std::find(v4.begin(), v4.end(), g.ipv4) != v4.end();
    if (gid < 0)
      report.fail(id + ".gid", where + " has no RoCE v2 IPv4 GID",
                  "give the rail an IPv4 address; check the port is RoCE v2 capable");
    else if (!gid_matches)
      report.warn(
          id + ".gid",
          where + " RoCE v2 IPv4 GID " + std::to_string(gid) + " is not one of its addresses",
          "the GID table lags the addresses: re-add the address or re-move the rail");
    else
      report.pass(id + ".gid", where + " RoCE v2 IPv4 GID index " + std::to_string(gid));
    rails.push_back({{"netdev", clean(d.netdev)},
                     {"ibdev", clean(d.ibdev)},
                     {"port", d.port},
                     {"ipv4", addrs},
                     {"gid_index", gid}});

    if (!profile) {
      report.warn(id + ".arp",
                  "cannot load ARP profile " + quote_value(ctx.arp_profile) + ": " + profile_error,
                  "install configs/netns/ or pass a profile that exists");
      continue;
    }
    std::string off, looser;
    std::string shown;
    for (const auto& [key, want] : profile->sysctls) {
      const long all = read_sysctl(ctx, "all", key);
      const long own = read_sysctl(ctx, d.netdev, key);
      if (own < 0) {
        off += std::string(off.empty() ? " " : "; ") + key + " unreadable";
        looser += "x";
        continue;
      }
      const long eff = key == "arp_filter" ? (all > 0 || own > 0 ? 1 : 0) : std::max(all, own);
      shown += " " + key + "=" + std::to_string(eff);
      if (eff != want) {
        off += std::string(off.empty() ? " " : "; ") + key + "=" + std::to_string(eff) + " (want " +
               std::to_string(want) + ")";
        if (eff < want) looser += "x";
      }
    }
    if (off.empty()) {
      report.pass(id + ".arp",
                  where + " matches profile " + quote_value(profile->name) + ":" + shown);
    } else {
      const std::string fix = "set net.ipv4.conf." + d.netdev + ".* as profile " + profile->name +
                              " says (gdrproxy netns move --arp-profile " + profile->name + ")";
      const std::string found =
          where + " differs from profile " + quote_value(profile->name) + ":" + off;
      // Looser than the profile on a node with several rails is ARP flux: replies leave by
      // the wrong rail and RoCE connections time out.
      if (!looser.empty() && devs.size() > 1)
        report.fail(id + ".arp", found, fix);
      else
        report.warn(id + ".arp", found, fix);
    }
  }
  report.facts()["rails"] = rails;
}

void hca_facts(const Context& ctx, Report& report) {
  nlohmann::json hcas = nlohmann::json::array();
  const std::string cls = ctx.sysfs_root + "/class/infiniband";
  for (const auto& name : list_dir(cls)) {
    nlohmann::json ports = nlohmann::json::array();
    for (const auto& p : list_dir(cls + "/" + name + "/ports"))
      ports.push_back(
          {{"port", clean(p)},
           {"link_layer", clean(attr(cls + "/" + name + "/ports/" + p + "/link_layer"))},
           {"rate", clean(attr(cls + "/" + name + "/ports/" + p + "/rate"))}});
    hcas.push_back({{"name", clean(name)},
                    {"fw_ver", clean(attr(cls + "/" + name + "/fw_ver"))},
                    {"ports", ports}});
  }
  report.facts()["hcas"] = hcas;
}

}  // namespace

void check_rdma(const Context& ctx, Report& report) {
  hca_facts(ctx, report);
  check_abi(ctx, report);
  check_nodes(ctx, report);
  check_provider_abi(ctx, report);
  check_rdma_netlink(ctx, report);
  check_rails(ctx, report);
}

}  // namespace gdrproxy::doctor
