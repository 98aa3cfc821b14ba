// Tree invariants; see verify.h. Checks, in order: every link resolves inside the tree and is
// spelled as the kernel spells it; the PCI tree (subsystem links, bus farm, pci_bus routes, bridge
// levels); the RDMA, verbs and net class farms; NUMA nodes referenced by devices.
#include "sysfs/verify.h"

#include <sys/stat.h>

#include <functional>
#include <map>

#include "base/file_io.h"
#include "sysfs/bdf.h"
#include "sysfs/kernel_link.h"

namespace gdrproxy::sysfs {
namespace {

class Verifier {
 public:
  explicit Verifier(std::string root) : root_(real_path(root).value_or(root)) {}

  std::vector<Violation> run() {
    if (!is_dir(root_)) {
      bad("", "not a directory");
      return out_;
    }
    walk("");
    check_pci();
    check_class_farm("class/infiniband", "infiniband");
    check_class_farm("class/net", "net");
    check_verbs();
    for (const char* mp : {"devices/system/cpu", "fs/cgroup"})
      if (!is_dir(abs(mp))) bad(mp, "missing mount point");
    return out_;
  }

 private:
  void bad(const std::string& path, std::string msg) { out_.push_back({path, std::move(msg)}); }
  std::string abs(const std::string& rel) const { return rel.empty() ? root_ : root_ + "/" + rel; }
  // Tree-relative form of an absolute path inside the tree; nullopt when outside.
  std::optional<std::string> rel_of(const std::string& a) const {
    if (a == root_) return std::string();
    if (a.compare(0, root_.size() + 1, root_ + "/") == 0) return a.substr(root_.size() + 1);
    return std::nullopt;
  }

  // Every entry: links must resolve inside the tree and be spelled the kernel's way.
  void walk(const std::string& rel) {
    for (const auto& name : list_dir(abs(rel))) {
      std::string r = rel.empty() ? name : rel + "/" + name;
      std::string a = abs(r);
      struct stat st;
      if (::lstat(a.c_str(), &st) != 0) continue;
      if (S_ISLNK(st.st_mode)) {
        links_.push_back(r);
        auto target = read_link(a).value_or("");
        auto resolved = real_path(a);
        if (!target.empty() && target[0] == '/') {
          bad(r, "absolute link target " + target +
                     " (must be relative to work under any mount point)");
          continue;
        }
        if (!resolved) {
          bad(r, "dangling link -> " + target);
          continue;
        }
        auto in = rel_of(*resolved);
        if (!in) {
          bad(r, "link leaves the tree -> " + target);
          continue;
        }
        std::string expect = kernel_relative_link(rel, *in);
        if (expect != target) bad(r, "link spelled " + target + ", the kernel spells it " + expect);
      } else if (S_ISDIR(st.st_mode)) {
        if (name.find(".tmp-") != std::string::npos) bad(r, "leftover temporary directory");
        if (is_bdf(name) && rel.rfind("devices", 0) == 0) bdf_dirs_[name].push_back(r);
        // The host's CPU topology is mounted here live; it is the host's, not the tree's.
        if (r != "devices/system/cpu") walk(r);
      } else if (!S_ISREG(st.st_mode)) {
        bad(r, "neither file, directory nor link");
      }
    }
  }

  std::string attr(const std::string& rel, const char* name) {
    return trim(read_text(abs(rel + "/" + name)).value_or(""));
  }

  void check_pci() {
    std::string bus_pci = real_path(abs("bus/pci")).value_or("");
    if (bus_pci.empty()) bad("bus/pci", "missing (every PCI `subsystem` link must resolve to it)");
    for (const auto& [bdf, dirs] : bdf_dirs_) {
      if (dirs.size() > 1) bad(dirs[1], "second directory for " + bdf + " (also " + dirs[0] + ")");
      const std::string& d = dirs[0];
      // Parent must be a root complex or a bridge: no level may be skipped or invented.
      std::string parent = dirname_of(d);
      std::string pname = basename_of(parent);
      if (is_root_complex_dir(pname)) {
        if (dirname_of(parent) != "devices")
          bad(d, "root complex " + pname + " not directly under devices/");
      } else if (is_bdf(pname)) {
        std::string cls = attr(parent, "class");
        if (cls.rfind("0x0604", 0) != 0 && cls.rfind("0x0607", 0) != 0)
          bad(d, "parent " + pname + " is not a PCI bridge (class " +
                     (cls.empty() ? "missing" : cls) + ")");
      } else {
        bad(d, "PCI function outside a pciDDDD:BB/... chain (parent " + pname + ")");
      }
      for (const char* a : {"class", "vendor", "device"})
        if (!read_text(abs(d + "/" + a))) bad(d + "/" + a, "missing");
      // NCCL: basename(realpath(<dev>/subsystem)) must be "pci".
      auto sub = real_path(abs(d + "/subsystem"));
      if (!sub || *sub != bus_pci) bad(d + "/subsystem", "does not resolve to bus/pci");
      // hwloc: bus/pci/devices/<bdf> is its device list.
      auto via_bus = real_path(abs("bus/pci/devices/" + bdf));
      if (!via_bus || via_bus != abs(d))
        bad("bus/pci/devices/" + bdf, "missing or not resolving to " + d);
      // NCCL: realpath(class/pci_bus/<bus>/../../<bdf>) must be the device itself.
      std::string bus = bus_of(bdf);
      auto via_class = real_path(abs("class/pci_bus/" + bus + "/../../" + bdf));
      if (!via_class || *via_class != abs(d))
        bad("class/pci_bus/" + bus,
            "route class/pci_bus/" + bus + "/../../" + bdf + " does not reach " + d);
      // hwloc: a bridge needs its config space (header type, bus numbers) to stay a bridge.
      std::string cls = attr(d, "class");
      if (cls.rfind("0x0604", 0) == 0) {
        auto cfg = read_file(abs(d + "/config"));
        if (!cfg.data || cfg.data->size() < 0x1b)
          bad(d + "/config", "bridge without config space (hwloc would not see a bridge)");
      }
      // NCCL reads numa_node to pick the CPU; its node must exist.
      std::string numa = attr(d, "numa_node");
      if (!numa.empty() && numa[0] != '-' &&
          !read_text(abs("devices/system/node/node" + numa + "/cpumap")))
        bad(d + "/numa_node",
            "node " + numa + " has no devices/system/node/node" + numa + "/cpumap");
    }
    for (const auto& name : list_dir(abs("bus/pci/devices")))
      if (!bdf_dirs_.count(name))
        bad("bus/pci/devices/" + name, "no device directory of that name");
    for (const auto& name : list_dir(abs("class/pci_bus"))) {
      auto r = real_path(abs("class/pci_bus/" + name));
      if (!r || basename_of(dirname_of(*r)) != "pci_bus" || basename_of(*r) != name)
        bad("class/pci_bus/" + name,
            "does not resolve to a <bridge>/pci_bus/" + name + " directory");
    }
  }

  // class/<c>/<name> -> devices/.../<bdf>/<...>/<c-dir>/<name>, with device and subsystem links.
  void check_class_farm(const std::string& cls, const std::string& subdir) {
    std::string cls_abs = real_path(abs(cls)).value_or("");
    for (const auto& name : list_dir(abs(cls))) {
      std::string r = cls + "/" + name;
      auto target = real_path(abs(r));
      if (!target) continue;  // reported by walk()
      if (!is_symlink(abs(r))) {
        bad(r, "class entry is not a symlink into devices/");
        continue;
      }
      if (basename_of(dirname_of(*target)) != subdir || basename_of(*target) != name)
        bad(r, "does not resolve to a .../" + subdir + "/" + name + " directory");
      auto rel = rel_of(*target).value_or("");
      if (rel.rfind("devices/pci", 0) != 0)
        bad(r, "not under devices/pci* (consumers attach it to no PCI device)");
      // An RDMA device hangs off a PCI function; an interface may sit one device lower
      // (virtio-net: <pci>/virtio2/net/eth0), but inside a PCI function all the same.
      auto dev = real_path(*target + "/device");
      if (!dev || (subdir == "infiniband" && !is_bdf(basename_of(*dev))) ||
          rel_of(*dev).value_or("").rfind("devices/pci", 0) != 0)
        bad(r + "/device", "missing or not resolving to a PCI function");
      auto sub = real_path(*target + "/subsystem");
      if (!sub || *sub != cls_abs) bad(r + "/subsystem", "does not resolve to " + cls);
      if (subdir == "infiniband") {
        auto ports = list_dir(*target + "/ports");
        if (ports.empty()) bad(r + "/ports", "no ports");
        for (const auto& p : ports) {
          std::string pr = r + "/ports/" + p;
          if (!is_dir(*target + "/ports/" + p + "/gids")) bad(pr + "/gids", "missing");
          // NCCL opens gid_attrs/types/<i> to pick a RoCE GID; InfiniBand ports use index 0
          // without reading it (and kernels before 4.x have no gid_attrs at all).
          bool roce =
              trim(read_text(*target + "/ports/" + p + "/link_layer").value_or("")) == "Ethernet";
          if (roce && !is_dir(*target + "/ports/" + p + "/gid_attrs/types"))
            bad(pr + "/gid_attrs/types",
                "missing on a RoCE port (NCCL fails the connection when it "
                "cannot open it)");
        }
      }
    }
  }

  void check_verbs() {
    auto entries = list_dir(abs("class/infiniband_verbs"));
    bool any = false;
    for (const auto& name : entries) {
      if (name == "abi_version") continue;
      any = true;
      std::string r = "class/infiniband_verbs/" + name;
      std::string ibdev = attr(r, "ibdev");
      if (ibdev.empty())
        bad(r + "/ibdev", "missing");
      else if (!is_dir(abs("class/infiniband/" + ibdev)))
        bad(r + "/ibdev", "names " + ibdev + ", which is not in class/infiniband");
      std::string dev = attr(r, "dev");
      unsigned ma, mi;
      if (std::sscanf(dev.c_str(), "%u:%u", &ma, &mi) != 2) bad(r + "/dev", "not MAJOR:MINOR");
    }
    if (any && !read_text(abs("class/infiniband_verbs/abi_version")))
      bad("class/infiniband_verbs/abi_version", "missing (libibverbs in sysfs mode lists nothing)");
    // Every RDMA device should be reachable by libibverbs.
    for (const auto& name : list_dir(abs("class/infiniband"))) {
      bool found = false;
      for (const auto& u : entries)
        if (u != "abi_version" && attr("class/infiniband_verbs/" + u, "ibdev") == name)
          found = true;
      if (!found) bad("class/infiniband/" + name, "no class/infiniband_verbs entry names it");
    }
  }

  std::string root_;
  std::vector<Violation> out_;
  std::vector<std::string> links_;
  std::map<std::string, std::vector<std::string>> bdf_dirs_;
};

}  // namespace

std::vector<Violation> verify_tree(const std::string& root) {
  return Verifier(root).run();
}

}  // namespace gdrproxy::sysfs
