// Enumeration of RDMA-backed netdevs from sysfs (see rdma_sysfs.h).
#include "netns/rdma_sysfs.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "base/error.h"

namespace gdrproxy::netns {
namespace fs = std::filesystem;
namespace {

// First line of a sysfs attribute, "" if it cannot be read (EINVAL for an empty GID slot).
std::string read_attr(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

std::string ipv4_of_gid(const std::string& gid) {
  static const std::string mapped = "0000:0000:0000:0000:0000:ffff:";
  if (gid.size() != 39 || gid.compare(0, mapped.size(), mapped) != 0) return "";
  unsigned a = 0, b = 0;
  try {
    a = std::stoul(gid.substr(30, 4), nullptr, 16);
    b = std::stoul(gid.substr(35, 4), nullptr, 16);
  } catch (const std::exception&) {
    return "";
  }
  return std::to_string(a >> 8) + "." + std::to_string(a & 0xff) + "." + std::to_string(b >> 8) +
         "." + std::to_string(b & 0xff);
}

std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

bool is_number(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::vector<RdmaNetdev> enumerate_rdma_netdevs(const std::string& sysfs_root) {
  fs::path cls = fs::path(sysfs_root) / "class" / "infiniband";
  std::error_code ec;
  if (!fs::exists(cls, ec)) return {};
  if (!fs::is_directory(cls, ec)) throw Error(cls.string() + " is not a directory");
  std::map<std::tuple<std::string, unsigned, std::string>, RdmaNetdev> found;
  for (const auto& devdir : entries(cls)) {
    const std::string ibdev = devdir.filename();
    std::vector<unsigned> ports;
    for (const auto& portdir : entries(devdir / "ports")) {
      if (!is_number(portdir.filename())) continue;
      unsigned port = std::stoul(portdir.filename());
      ports.push_back(port);
      for (const auto& gidfile : entries(portdir / "gids")) {
        if (!is_number(gidfile.filename())) continue;
        GidEntry g;
        g.index = std::stoul(gidfile.filename());
        g.gid = read_attr(gidfile);
        g.type = read_attr(portdir / "gid_attrs" / "types" / gidfile.filename());
        g.ndev = read_attr(portdir / "gid_attrs" / "ndevs" / gidfile.filename());
        g.ipv4 = ipv4_of_gid(g.gid);
        if (g.ndev.empty()) continue;  // an unused slot or an InfiniBand GID
        auto& rec = found[{ibdev, port, g.ndev}];
        rec.netdev = g.ndev;
        rec.ibdev = ibdev;
        rec.port = port;
        rec.gids.push_back(g);
      }
    }
    // A netdev of the device with no GID yet (no address, link down) is still RDMA-backed.
    // The kernel does not say which port it is; one-port devices (the usual case) have no doubt.
    std::sort(ports.begin(), ports.end());
    for (const auto& netdir : entries(devdir / "device" / "net")) {
      const std::string netdev = netdir.filename();
      bool known = false;
      for (const auto& [key, rec] : found)
        known = known || (rec.ibdev == ibdev && rec.netdev == netdev);
      if (known || ports.empty()) continue;
      auto& rec = found[{ibdev, ports.front(), netdev}];
      rec.netdev = netdev;
      rec.ibdev = ibdev;
      rec.port = ports.front();
    }
  }
  std::vector<RdmaNetdev> out;
  for (auto& [key, rec] : found) {
    std::sort(rec.gids.begin(), rec.gids.end(),
              [](const GidEntry& a, const GidEntry& b) { return a.index < b.index; });
    out.push_back(std::move(rec));
  }
  return out;
}

std::vector<std::string> verbs_nodes_of_ibdev(const std::string& sysfs_root,
                                              const std::string& ibdev) {
  if (ibdev.empty() || ibdev.find('/') != std::string::npos || ibdev[0] == '.') return {};
  std::vector<std::string> out;
  std::error_code ec;
  const fs::path dev = fs::path(sysfs_root) / "class" / "infiniband" / ibdev / "device";
  if (fs::exists(dev, ec)) {
    for (const auto& e : entries(dev / "infiniband_verbs"))
      if (e.filename().string().rfind("uverbs", 0) == 0) out.push_back(e.filename());
  } else {
    for (const auto& e : entries(fs::path(sysfs_root) / "class" / "infiniband_verbs")) {
      if (e.filename().string().rfind("uverbs", 0) != 0) continue;
      std::ifstream in(e / "ibdev");
      std::string name;
      if (std::getline(in, name) && name == ibdev) out.push_back(e.filename());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> netdevs_of_verbs_node(const std::string& sysfs_root,
                                               const std::string& uverbs) {
  if (uverbs.empty() || uverbs.find('/') != std::string::npos || uverbs[0] == '.') return {};
  std::string ibdev;
  for (const auto& devdir : entries(fs::path(sysfs_root) / "class" / "infiniband")) {
    const auto nodes = verbs_nodes_of_ibdev(sysfs_root, devdir.filename());
    if (std::find(nodes.begin(), nodes.end(), uverbs) != nodes.end()) ibdev = devdir.filename();
  }
  if (ibdev.empty()) return {};
  std::vector<std::string> out;
  for (const auto& d : enumerate_rdma_netdevs(sysfs_root))
    if (d.ibdev == ibdev && std::find(out.begin(), out.end(), d.netdev) == out.end())
      out.push_back(d.netdev);
  return out;
}

int roce_v2_ipv4_gid_index(const RdmaNetdev& dev, const std::vector<std::string>& ipv4s) {
  int lowest = -1;
  for (const auto& g : dev.gids) {
    if (g.type != "RoCE v2" || g.ipv4.empty()) continue;
    if (std::find(ipv4s.begin(), ipv4s.end(), g.ipv4) != ipv4s.end())
      return static_cast<int>(g.index);
    if (lowest < 0) lowest = static_cast<int>(g.index);
  }
  return lowest;
}

}  // namespace gdrproxy::netns
