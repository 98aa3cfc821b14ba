// Building the CDI spec (see cdi_spec.h) from sysfs and the NVIDIA driver's /proc files.
#include "proxy/oci/cdi_spec.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <vector>

#include "netns/rdma_sysfs.h"

#include "base/error.h"
#include "proxy/abi/nvidia_abi.h"
#include "proxy/devices/nvidia_gpus.h"
#include "proxy/oci/nvidia_user_files.h"

namespace gdrproxy::proxy {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

json node(const std::string& path) {
  return {{"path", path}};
}

void add_node(json& edits, const std::string& path) {
  json& nodes = edits["deviceNodes"];
  if (!nodes.is_array()) nodes = json::array();
  for (const json& n : nodes)
    if (n["path"] == path) return;
  nodes.push_back(node(path));
}

void add_mount(json& edits, const json& mount) {
  json& mounts = edits["mounts"];
  if (!mounts.is_array()) mounts = json::array();
  for (const json& m : mounts)
    if (m["containerPath"] == mount["containerPath"]) return;
  mounts.push_back(mount);
}

void add_hook(json& edits, const json& hook) {
  json& hooks = edits["hooks"];
  if (!hooks.is_array()) hooks = json::array();
  if (std::find(hooks.begin(), hooks.end(), hook) == hooks.end()) hooks.push_back(hook);
}

// "1.1.0" -> 10100, for comparing versions.
int version_number(const std::string& v) {
  int a = 0, b = 0, c = 0;
  if (std::sscanf(v.c_str(), "%d.%d.%d", &a, &b, &c) < 2)
    throw Error("CDI version " + v + " is not MAJOR.MINOR.PATCH");
  return a * 10000 + b * 100 + c;
}

}  // namespace

json generate_cdi_spec(const CdiOptions& o) {
  // Hooks (0.3.0) and deviceNodes are all this spec uses: versions from 0.3.0 on can carry it.
  if (version_number(o.cdi_version) < version_number("0.3.0"))
    throw Error("CDI version " + o.cdi_version + " is older than 0.3.0, which the hooks need");
  std::string self = o.gdrproxy_path;
  if (self.empty()) {
    std::error_code ec;
    self = fs::read_symlink("/proc/self/exe", ec).string();
  }
  json devices = json::array();
  json all = json::object();
  auto add_device = [&](const std::string& name, const json& edits) {
    devices.push_back({{"name", name}, {"containerEdits", edits}});
    for (const json& n : edits.value("deviceNodes", json::array())) add_node(all, n["path"]);
    for (const json& h : edits.value("hooks", json::array())) add_hook(all, h);
    for (const json& m : edits.value("mounts", json::array())) add_mount(all, m);
  };

  std::vector<DriverFileMount> driver_files;
  if (o.driver_files)
    if (const auto version = detect_nvidia_driver_version(o.proc_root))
      driver_files = nvidia_user_files(o.driver_root, *version);

  for (const ProcGpu& g : nvidia_gpus_in_proc(o.proc_root)) {
    json edits = json::object();
    add_node(edits, "/dev/nvidia" + std::to_string(g.minor));
    for (const char* common : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"})
      add_node(edits, common);
    for (const DriverFileMount& f : driver_files)
      add_mount(edits, {{"hostPath", f.host_path},
                        {"containerPath", f.container_path},
                        {"options", {"ro", "nosuid", "nodev", "bind"}}});
    add_device("gpu" + std::to_string(g.minor), edits);
    if (!g.uuid.empty()) add_device(g.uuid, edits);
  }

  // RDMA devices by ibdev, each with its uverbs node; RoCE ports' netdevs are its rails.
  std::map<std::string, std::vector<std::string>> rails;
  for (const auto& d : netns::enumerate_rdma_netdevs(o.sysfs_root)) {
    auto& r = rails[d.ibdev];
    if (std::find(r.begin(), r.end(), d.netdev) == r.end()) r.push_back(d.netdev);
  }
  std::error_code ec;
  std::vector<std::string> ibdevs;
  for (const auto& e : fs::directory_iterator(o.sysfs_root + "/class/infiniband", ec))
    ibdevs.push_back(e.path().filename().string());
  std::sort(ibdevs.begin(), ibdevs.end());
  for (const std::string& ib : ibdevs) {
    const auto nodes = netns::verbs_nodes_of_ibdev(o.sysfs_root, ib);
    if (nodes.empty()) continue;  // no verbs interface: nothing a container can use
    const std::string& uverbs = nodes.back();
    json edits = json::object();
    add_node(edits, "/dev/infiniband/" + uverbs);
    add_node(edits, "/dev/infiniband/rdma_cm");
    const auto it = rails.find(ib);
    if (it != rails.end() && !it->second.empty()) {
      std::string list;
      for (const auto& n : it->second) list += (list.empty() ? "" : ",") + n;
      json create = {
          {"hookName", "createRuntime"},
          {"path", self},
          {"args",
           {"gdrproxy", "hook", "create-runtime", "--rails", list, "--profile", o.rail_profile}}};
      if (o.allow_plain_rails) create["args"].push_back("--allow-plain-rails");
      add_hook(edits, create);
      add_hook(
          edits,
          {{"hookName", "poststop"}, {"path", self}, {"args", {"gdrproxy", "hook", "poststop"}}});
    }
    add_device(ib, edits);
  }
  add_device("all", all);
  return {{"cdiVersion", o.cdi_version}, {"kind", kCdiKind}, {"devices", devices}};
}

}  // namespace gdrproxy::proxy
