#include "proxy/devices/device_catalog.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <stdexcept>

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

}  // namespace

DeviceCatalog DeviceCatalog::scan(const std::string& dev_root) {
  DeviceCatalog c;
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
  std::sort(c.nodes_.begin(), c.nodes_.end(),
            [](const DeviceNode& a, const DeviceNode& b) { return a.name < b.name; });
  return c;
}

const DeviceNode* DeviceCatalog::find(dev_t rdev) const {
  for (const auto& n : nodes_)
    if (n.rdev == rdev) return &n;
  return nullptr;
}

const DeviceNode* DeviceCatalog::find_by_name(const std::string& spec) const {
  for (const auto& n : nodes_)
    if (n.name == spec || n.path == spec) return &n;
  return nullptr;
}

Grants Grants::from_specs(const DeviceCatalog& catalog,
                          const std::optional<std::vector<std::string>>& specs) {
  Grants g;
  if (!specs) return g;
  g.all_ = false;
  if (specs->size() == 1 && specs->front() == "none") return g;
  for (const auto& s : *specs) {
    if (s == "none") throw std::runtime_error("grant 'none' cannot be combined with other grants");
    const DeviceNode* n = catalog.find_by_name(s);
    if (!n)
      throw std::runtime_error("grant '" + s + "': no such RDMA or NVIDIA device on this host");
    if (!n->brokerable)
      throw std::runtime_error("grant '" + s + "': " + n->path +
                               " is not a device gdrproxy brokers");
    g.names_.push_back(n->name);
  }
  return g;
}

bool Grants::granted(const DeviceNode& node) const {
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
