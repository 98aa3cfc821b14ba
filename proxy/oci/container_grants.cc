// A container's grant set and what it becomes in a bundle (see container_grants.h).
#include "proxy/oci/container_grants.h"

#include <sys/sysmacros.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>

#include "base/error.h"
#include "base/lists.h"
#include "proxy/abi/device_drivers.h"

namespace gdrproxy::proxy {
namespace {

using json = nlohmann::json;

json rule(bool allow, unsigned major, std::optional<unsigned> minor, const char* access) {
  json r = {{"allow", allow}, {"type", "c"}, {"major", major}, {"access", access}};
  if (minor) r["minor"] = *minor;
  return r;
}

bool cgroup_allowed(DeviceClass c) {
  return c == DeviceClass::kUverbs || c == DeviceClass::kRdmaCm;
}

}  // namespace

ContainerGrants ContainerGrants::resolve(const DeviceCatalog& catalog,
                                         const std::vector<std::string>& names) {
  ContainerGrants g;
  for (const std::string& n : names) {
    const DeviceNode* node = catalog.find_by_name(n);
    if (!node)
      throw Error("no device " + n + " on this host (see ls /dev/infiniband /dev/nvidia*)");
    if (!node->brokerable) throw Error("device " + n + " can never be granted");
    if (std::none_of(g.nodes.begin(), g.nodes.end(),
                     [&](const DeviceNode& x) { return x.rdev == node->rdev; }))
      g.nodes.push_back(*node);
  }
  return g;
}

std::vector<std::string> ContainerGrants::names() const {
  std::vector<std::string> out;
  for (const DeviceNode& n : nodes) out.push_back(n.name);
  return out;
}

json ContainerGrants::spec_devices() const {
  json out = json::array();
  for (const DeviceNode& n : nodes)
    out.push_back({{"path", n.path.rfind("/dev/", 0) == 0 ? n.path : "/dev/" + n.name},
                   {"type", "c"},
                   {"major", major(n.rdev)},
                   {"minor", minor(n.rdev)},
                   {"fileMode", 0666},
                   {"uid", 0},
                   {"gid", 0}});
  return out;
}

json ContainerGrants::cgroup_rules(const DeviceCatalog& catalog) const {
  json out = json::array();
  std::set<unsigned> majors = {kUverbsMajor, kNvidiaFrontendMajor};
  for (const DeviceNode& d : catalog.drivers()) {
    if (major(d.rdev) == 10)
      out.push_back(rule(false, 10, minor(d.rdev), "rwm"));
    else
      majors.insert(major(d.rdev));
  }
  for (unsigned m : majors) out.push_back(rule(false, m, std::nullopt, "rwm"));
  // Catalogued nodes by their exact numbers (stand-ins, and nodes of drivers that register no
  // name this host lists).
  for (const DeviceNode& n : catalog.nodes())
    out.push_back(rule(false, major(n.rdev), minor(n.rdev), "rwm"));
  // Granted nodes: the runtime makes them ("m"); only uverbs and rdma_cm may also be opened.
  for (const DeviceNode& n : nodes)
    out.push_back(
        rule(true, major(n.rdev), minor(n.rdev), cgroup_allowed(n.device_class) ? "rwm" : "m"));
  return out;
}

std::string metadata_with_line(const std::string& metadata, std::string_view key,
                               const std::string& value) {
  const std::string prefix = std::string(key) + "=";
  std::string out;
  std::istringstream in(metadata);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) != 0 && !line.empty()) out += line + "\n";
  return out + prefix + value;
}

std::optional<std::string> metadata_line(const std::string& metadata, std::string_view key) {
  const std::string prefix = std::string(key) + "=";
  std::istringstream in(metadata);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
  return std::nullopt;
}

std::string metadata_with_grants(const std::string& metadata,
                                 const std::vector<std::string>& names) {
  return metadata_with_line(metadata, kGrantsMetadataKey, join_list(names));
}

std::optional<std::vector<std::string>> grants_in_metadata(const std::string& metadata) {
  const std::optional<std::string> line = metadata_line(metadata, kGrantsMetadataKey);
  if (!line) return std::nullopt;
  return split_list(*line);
}

}  // namespace gdrproxy::proxy
