// Building a container's synthetic /sys from its grant set (see container_sysfs.h): granted
// nodes to PCI functions and RDMA devices, then the sysfs library's selection, tree and mount
// plan, turned into spec mounts.
#include "proxy/oci/container_sysfs.h"

#include <filesystem>

#include "base/error.h"
#include "proxy/devices/nvidia_gpus.h"
#include "sysfs/builder.h"
#include "sysfs/capture.h"
#include "sysfs/mount_plan.h"
#include "sysfs/selection.h"

namespace gdrproxy::proxy {
namespace {

using json = nlohmann::json;

// The read-only, inert options of every mount of the tree.
json mount(const std::string& destination, const std::string& source) {
  return {{"destination", destination},
          {"type", "bind"},
          {"source", source},
          {"options", {"rbind", "ro", "nosuid", "nodev", "noexec"}}};
}

bool below_sys(const std::string& destination) {
  std::string d = destination;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d == "/sys" || d.rfind("/sys/", 0) == 0;
}

}  // namespace

std::string container_sysfs_path(const std::string& bundle) {
  return std::filesystem::absolute(bundle).lexically_normal().string() + "/gdrproxy-sys";
}

ContainerSysfs build_container_sysfs(const std::string& bundle, const ContainerGrants& grants,
                                     const ContainerSysfsOptions& o) {
  // The sysfs library reads <root>/sys: the root is the directory holding the sysfs tree.
  const std::filesystem::path sys_dir = std::filesystem::path(o.sysfs_root).lexically_normal();
  if (sys_dir.filename() != "sys")
    throw Error("the sysfs root " + o.sysfs_root + " is not a directory named sys");
  const std::string root =
      sys_dir.parent_path().empty() ? std::string("/") : sys_dir.parent_path().string();
  sysfs::SelectionRequest req;
  req.gpus_given = req.nics_given = true;
  ContainerSysfs out;
  // Only the granted devices and the functions above them are read, and not the ports' tables,
  // which are bound live from the host (below).
  sysfs::CaptureOptions capture_options{.port_tables = false};
  std::vector<std::string> uverbs;
  std::vector<ProcGpu> proc_gpus;
  bool proc_read = false;
  for (const DeviceNode& n : grants.nodes) {
    if (n.device_class == DeviceClass::kNvidiaFrontend && n.name.rfind("nvidia", 0) == 0 &&
        n.name.size() > 6 && n.name.find_first_not_of("0123456789", 6) == std::string::npos) {
      if (!proc_read) proc_gpus = nvidia_gpus_in_proc(o.proc_root), proc_read = true;
      const unsigned minor = static_cast<unsigned>(std::stoul(n.name.substr(6)));
      const ProcGpu* g = nullptr;
      for (const ProcGpu& p : proc_gpus)
        if (p.minor == minor) g = &p;
      if (!g)
        throw Error("granted " + n.name + ": the NVIDIA driver lists no GPU with minor " +
                    std::to_string(minor) + " in " + o.proc_root +
                    "/driver/nvidia/gpus, so its /sys cannot be built (--no-sysfs leaves /sys "
                    "alone)");
      req.gpus.push_back(g->bdf);
      capture_options.only_pci.push_back(g->bdf);
    } else if (n.device_class == DeviceClass::kUverbs) {
      uverbs.push_back(n.name);
      capture_options.only_uverbs.push_back(n.name);
    }
  }
  const sysfs::Snapshot snap = sysfs::capture(root, capture_options);
  for (const std::string& u : uverbs) {
    const sysfs::IbDevice* dev = nullptr;
    for (const sysfs::IbDevice& d : snap.ib)
      if (d.verbs && d.verbs->name == u) dev = &d;
    if (!dev)
      throw Error("granted " + u + ": no RDMA device of " + o.sysfs_root +
                  " has that uverbs node, so its /sys cannot be built (a stand-in node? "
                  "--no-sysfs leaves /sys alone)");
    req.nics.push_back(dev->name);
  }
  const sysfs::Selection sel = sysfs::select(snap, req);
  sysfs::BuildOptions bo;
  bo.out = container_sysfs_path(bundle);
  bo.force = true;
  bo.live_ports = true;
  const sysfs::BuildResult built = sysfs::build_tree(snap, sel, bo);
  const sysfs::MountPlan plan = sysfs::make_mount_plan(snap, sel, built.path, root);
  out.tree = plan.tree;
  out.gpus = req.gpus;
  out.nics = req.nics;
  out.files = built.files;
  out.links = built.links;
  out.mounts = json::array({mount("/sys", plan.tree)});
  for (const sysfs::BindMount& b : plan.binds)
    out.mounts.push_back(mount("/sys/" + b.target, b.source));
  return out;
}

json mounts_with_sysfs(const json& mounts, const ContainerSysfs& sysfs) {
  json out = json::array();
  bool placed = false;
  const auto place = [&] {
    if (placed) return;
    for (const json& m : sysfs.mounts) out.push_back(m);
    placed = true;
  };
  if (mounts.is_array()) {
    for (const json& m : mounts) {
      const std::string d = m.is_object() ? m.value("destination", "") : "";
      if (d == "/sys/fs/cgroup" || d == "/sys/fs/cgroup/") {
        place();  // the tree holds its mount point
        out.push_back(m);
      } else if (below_sys(d)) {
        place();
      } else {
        out.push_back(m);
      }
    }
  }
  place();
  return out;
}

}  // namespace gdrproxy::proxy
