#include "proxy/devices/device_catalog.h"

#include <sys/stat.h>

#include <sys/sysmacros.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

#include "base/error.h"
#include "base/hot_path.h"
#include "proxy/abi/device_drivers.h"
#include "proxy/devices/uverbs_provider.h"

namespace gdrproxy::proxy {
namespace {

namespace fs = std::filesystem;

void classify(DeviceNode& n) {
  static const std::regex uverbs("^uverbs[0-9]+$");
  static const std::regex gpu("^nvidia[0-9]+$");
  if (std::regex_match(n.name, uverbs)) {
    n.device_class = DeviceClass::kUverbs;
    n.brokerable = true;
  } else if (n.name == "rdma_cm") {
    n.device_class = DeviceClass::kRdmaCm;
    n.brokerable = true;
  } else if (n.name == "nvidiactl" || std::regex_match(n.name, gpu)) {
    n.device_class = DeviceClass::kNvidiaFrontend;
    n.brokerable = true;
  } else if (n.name == "nvidia-uvm" || n.name == "nvidia-uvm-tools") {
    n.device_class = DeviceClass::kNvidiaUvm;
    n.brokerable = true;
  } else if (n.name.rfind("nvidia-caps/", 0) == 0) {
    n.device_class = DeviceClass::kNvidiaCaps;
    n.brokerable = true;
  }
  // Anything else found there (umadN, issmN, nvidia-modeset, ...) is guarded but never brokered.
}

void add_if_chardev(std::vector<DeviceNode>& out, const fs::path& p, std::string name) {
  struct stat st;
  if (::stat(p.c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) return;
  DeviceNode n{p.string(), std::move(name), DeviceClass::kUnknown, st.st_rdev, false};
  classify(n);
  out.push_back(std::move(n));
}

// Character majors (/proc/devices) and misc minors (/proc/misc) of the guarded drivers, as
// never-granted entries.
// Each character-device registration as the kernel lists it now: (major, 0, name) from
// <proc_root>/devices, and with `misc` (10, minor, name) from <proc_root>/misc.
void for_each_registration(const std::string& proc_root, bool chars_wanted, bool misc_wanted,
                           const std::function<void(unsigned, unsigned, const std::string&)>& f) {
  std::string line;
  if (chars_wanted) {
    std::ifstream devices(proc_root + "/devices");
    bool chars = false;
    while (std::getline(devices, line)) {
      if (line.rfind("Character devices:", 0) == 0) chars = true;
      if (line.rfind("Block devices:", 0) == 0) chars = false;
      std::istringstream ss(line);
      unsigned major;
      std::string name;
      if (chars && (ss >> major >> name)) f(major, 0, name);
    }
  }
  if (misc_wanted) {
    std::ifstream misc(proc_root + "/misc");
    while (std::getline(misc, line)) {
      std::istringstream ss(line);
      unsigned minor;
      std::string name;
      if (ss >> minor >> name) f(10, minor, name);
    }
  }
}

// The never-granted entry of a registration whose name is a guarded driver's.
std::optional<DeviceNode> guarded_entry(unsigned major, unsigned minor, const std::string& name) {
  for (const auto& d : kGuardedDrivers)
    if (d.name == name)
      return DeviceNode{"(" + name + " device " + std::to_string(major) + ":" +
                            (d.misc ? std::to_string(minor) : "*") + ")",
                        name, d.device_class, makedev(major, minor), false};
  return std::nullopt;
}

std::vector<DeviceNode> guarded_driver_numbers(const std::string& proc_root) {
  std::vector<DeviceNode> out;
  for_each_registration(proc_root, true, true,
                        [&](unsigned major, unsigned minor, const std::string& name) {
                          if (auto e = guarded_entry(major, minor, name)) out.push_back(*e);
                        });
  return out;
}

const DeviceNode* driver_of(const std::vector<DeviceNode>& drivers, dev_t rdev) {
  for (const auto& d : drivers) {
    const bool misc = major(d.rdev) == 10;
    if (major(d.rdev) == major(rdev) && (!misc || minor(d.rdev) == minor(rdev))) return &d;
  }
  return nullptr;
}

// A node found by its driver: named after its path below /dev; a brokerable kind only when its
// name is one gdrproxy knows how to broker (a frontend GPU or nvidiactl, uverbsN, ...).
void add_by_driver(std::vector<DeviceNode>& out, const fs::path& p, const std::string& name,
                   const DeviceNode& driver, dev_t rdev) {
  DeviceNode n{p.string(), name, DeviceClass::kUnknown, rdev, false};
  classify(n);
  if (n.device_class != driver.device_class) {
    // A known driver under an unexpected name: guarded, never brokered.
    n.device_class = driver.device_class == DeviceClass::kNvidiaCaps ? DeviceClass::kNvidiaCaps
                                                                     : DeviceClass::kUnknown;
    n.brokerable = false;
  }
  if (driver.device_class == DeviceClass::kNvidiaFrontend && minor(rdev) == kNvidiaModesetMinor)
    n.brokerable = false;
  out.push_back(std::move(n));
}

}  // namespace

DeviceCatalog DeviceCatalog::scan(const std::string& dev_root, const std::string& proc_root,
                                  const std::string& sys_root) {
  DeviceCatalog c;
  c.dev_root_ = dev_root;
  c.proc_root_ = proc_root;
  std::error_code ec;
  const fs::path root(dev_root);
  for (const char* sub : {"infiniband", "nvidia-caps"}) {
    const fs::path dir = root / sub;
    if (!fs::is_directory(dir, ec)) continue;
    c.guarded_dirs_.push_back(dir.string());
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string leaf = e.path().filename().string();
      add_if_chardev(c.nodes_, e.path(),
                     std::string(sub) == "infiniband" ? leaf : "nvidia-caps/" + leaf);
    }
  }
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string leaf = e.path().filename().string();
    if (leaf.rfind("nvidia", 0) == 0 && leaf != "nvidia-caps")
      add_if_chardev(c.nodes_, e.path(), leaf);
  }
  // By driver: every character device under /dev (and one level of directories) whose number
  // belongs to a guarded driver and is not catalogued yet (imex channels, nvswitch, umad, ...).
  c.drivers_ = guarded_driver_numbers(proc_root);
  auto known = [&](const fs::path& p) {
    return std::any_of(c.nodes_.begin(), c.nodes_.end(),
                       [&](const DeviceNode& n) { return n.path == p.string(); });
  };
  auto visit = [&](const fs::path& p, const std::string& name) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISCHR(st.st_mode) || known(p)) return false;
    const DeviceNode* d = driver_of(c.drivers_, st.st_rdev);
    if (!d) return false;
    add_by_driver(c.nodes_, p, name, *d, st.st_rdev);
    return true;
  };
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string leaf = e.path().filename().string();
    if (e.is_symlink(ec)) continue;
    if (e.is_directory(ec)) {
      bool all_guarded = true, any = false;
      for (const auto& f : fs::directory_iterator(e.path(), ec)) {
        any = true;
        if (!visit(f.path(), leaf + "/" + f.path().filename().string()) && !known(f.path()))
          all_guarded = false;
      }
      const bool listed = std::find(c.guarded_dirs_.begin(), c.guarded_dirs_.end(),
                                    e.path().string()) != c.guarded_dirs_.end();
      if (any && all_guarded && !listed) c.guarded_dirs_.push_back(e.path().string());
    } else {
      visit(e.path(), leaf);
    }
  }
  for (auto& n : c.nodes_)
    if (n.device_class == DeviceClass::kUverbs)
      n.rdma_driver = uverbs_provider_of(sys_root, n.rdev);
  std::sort(c.nodes_.begin(), c.nodes_.end(),
            [](const DeviceNode& a, const DeviceNode& b) { return a.name < b.name; });
  return c;
}

GDRPROXY_HOT const DeviceNode* DeviceCatalog::find(dev_t rdev) const {
  for (const auto& n : nodes_)
    if (n.rdev == rdev) return &n;
  return driver_of(drivers_, rdev);
}

const DeviceNode* DeviceCatalog::find_node(dev_t rdev) const {
  for (const auto& n : nodes_)
    if (n.rdev == rdev) return &n;
  return nullptr;
}

const DeviceNode* DeviceCatalog::find_by_name(const std::string& spec) const {
  for (const auto& n : nodes_)
    if (n.name == spec || n.path == spec) return &n;
  return nullptr;
}

std::optional<DeviceNode> guarded_driver_now(dev_t rdev, const std::string& proc_root,
                                             bool* registered) {
  // A misc device is known by its minor in /proc/misc; any other by its major in /proc/devices
  // (one major may carry several names: any guarded one makes it guarded).
  const bool misc = major(rdev) == 10;
  std::optional<DeviceNode> out;
  if (registered) *registered = false;
  for_each_registration(proc_root, !misc, misc,
                        [&](unsigned maj, unsigned min, const std::string& name) {
                          if (maj != major(rdev) || (misc && min != minor(rdev))) return;
                          if (registered) *registered = true;
                          if (!out) out = guarded_entry(maj, min, name);
                        });
  return out;
}

std::string ungranted_reason(const DeviceNode& node) {
  if (!node.uncatalogued)
    return node.brokerable ? "device " + node.name + " is not granted"
                           : node.path + " is never brokered";
  return "char device " + std::to_string(major(node.rdev)) + ":" +
         std::to_string(minor(node.rdev)) + " (" + node.name +
         ") belongs to a guarded driver but was not catalogued when this sandbox started";
}

Grants Grants::from_specs(const DeviceCatalog& catalog,
                          const std::optional<std::vector<std::string>>& specs) {
  Grants g;
  if (!specs) return g;
  g.all_ = false;
  if (specs->size() == 1 && specs->front() == "none") return g;
  for (const auto& s : *specs) {
    if (s == "none") throw Error("grant 'none' cannot be combined with other grants");
    const DeviceNode* n = catalog.find_by_name(s);
    if (!n) throw Error("grant '" + s + "': no such RDMA or NVIDIA device on this host");
    if (!n->brokerable)
      throw Error("grant '" + s + "': " + n->path + " is not a device gdrproxy brokers");
    g.names_.push_back(n->name);
  }
  return g;
}

GDRPROXY_HOT bool Grants::granted(const DeviceNode& node) const {
  if (!node.brokerable) return false;
  if (all_) return true;
  return std::find(names_.begin(), names_.end(), node.name) != names_.end();
}

std::vector<std::string> Grants::names() const {
  return names_;
}

bool opened_by_caller(DeviceClass c) {
  return c == DeviceClass::kUverbs || c == DeviceClass::kRdmaCm;
}

}  // namespace gdrproxy::proxy
