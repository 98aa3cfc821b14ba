// Snapshot capture from a sysfs tree; see capture.h.
#include "sysfs/capture.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>

#include "base/error.h"
#include "base/file_io.h"
#include "sysfs/bdf.h"

namespace gdrproxy::sysfs {
namespace {

// Attributes recorded per object. Anything else in the kernel's directories is not read by the
// consumers gdrproxy serves (NCCL, hwloc, libibverbs, UCX), so it is not carried.
const char* const kPciAttrs[] = {"class",
                                 "vendor",
                                 "device",
                                 "subsystem_vendor",
                                 "subsystem_device",
                                 "revision",
                                 "numa_node",
                                 "local_cpus",
                                 "local_cpulist",
                                 "max_link_speed",
                                 "max_link_width",
                                 "current_link_speed",
                                 "current_link_width",
                                 "modalias",
                                 "uevent"};
// Missing any of these is worth a log line; the rest are commonly absent (bridges, old kernels).
const char* const kPciCoreAttrs[] = {"class", "vendor", "device", "subsystem_vendor",
                                     "subsystem_device"};
const char* const kIbAttrs[] = {"node_type", "node_guid", "sys_image_guid", "fw_ver",
                                "hca_type",  "board_id",  "hw_rev",         "node_desc"};
const char* const kPortAttrs[] = {"state",  "phys_state", "rate",           "link_layer", "lid",
                                  "sm_lid", "sm_sl",      "lid_mask_count", "cap_mask"};
const char* const kUverbsAttrs[] = {"ibdev", "dev", "abi_version"};
const char* const kNetAttrs[] = {"address", "broadcast", "addr_len", "mtu",
                                 "type",    "dev_port",  "dev_id",   "operstate",
                                 "speed",   "ifindex",   "carrier",  "uevent"};
const char* const kPeerMemoryMarkers[] = {"kernel/mm/memory_peers/nv_mem/version",
                                          "kernel/mm/memory_peers/nv_mem_nc/version",
                                          "module/nvidia_peermem/version"};

// "12" -> 12; anything else (including "12a", "-1") -> nullopt.
std::optional<int> parse_index(const std::string& s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

bool printable(const std::string& s) {
  for (unsigned char c : s)
    if (c >= 0x7f || (c < 0x20 && c != '\n' && c != '\t')) return false;
  return true;
}

class Capturer {
 public:
  Capturer(std::string root, const CaptureOptions& options)
      : options_(options),
        root_(std::move(root)),
        sys_(join(root_, "sys")),
        real_root_(real_path(root_).value_or(root_)),
        real_devices_(real_path(join(sys_, "devices")).value_or("")) {}

  Snapshot run() {
    std::string devices = join(sys_, "devices");
    if (!is_dir(devices))
      throw Error("no sysfs under " + sys_ + ": " + devices + " is not a readable directory");
    snap_.source = root_;
    snap_.port_tables = options_.port_tables;
    find_targets();
    walk_pci(devices);
    cross_check_bus();
    read_infiniband();
    read_net();
    read_numa();
    read_peer_memory();
    return std::move(snap_);
  }

 private:
  void omit(std::string what) { snap_.omissions.push_back(std::move(what)); }

  // "/root/sys/devices/x" -> "/sys/devices/x": how the host names the path.
  std::string host_name(const std::string& abs) const {
    const std::string& r = real_root_;
    if (r == "/") return abs;
    if (abs.compare(0, r.size(), r) == 0) return abs.substr(r.size());
    return abs;
  }

  // Reads `names` from `dir` into `out`. A file that is there but that the kernel refuses to
  // read (EINVAL for a down link's speed, ENODATA for an empty GID slot's type) goes into
  // `refused` with its errno: the tree must fail the same way, not look absent.
  void read_attrs(const std::string& dir, const char* const* begin, const char* const* end,
                  AttrMap& out, RefusedMap& refused) {
    for (auto it = begin; it != end; ++it) {
      std::string p = join(dir, *it);
      ReadResult r = read_file(p);
      if (r.data) {
        if (!printable(*r.data)) {
          omit(host_name(p) + ": not text, left out");
          continue;
        }
        out[*it] = *r.data;
      } else if (is_refusal(r)) {
        refused[*it] = r.error;
      } else if (r.error != ENOENT && r.error != ENOTDIR) {
        omit(host_name(p) + ": unreadable (" + std::strerror(r.error) + "), left out");
      }
    }
  }

  // The file exists and the host's open() or read() of it fails: what a tenant must see too.
  // (An open() that says ENOENT is an absent file; a read() that says it is a refusal: a
  // queue's traffic_class without traffic classes.) A directory where an attribute should be
  // (EISDIR) is a broken tree, not an answer.
  static bool is_refusal(const ReadResult& r) {
    if (r.error == EISDIR || r.error == EFBIG) return false;
    return r.opened || (r.error != ENOENT && r.error != ENOTDIR);
  }

  // The canonical paths (relative to devices/) of the devices CaptureOptions limits the capture
  // to; `limited_` says whether there is a limit at all.
  void find_targets() {
    limited_ = !options_.only_uverbs.empty() || !options_.only_pci.empty();
    // A function brings what the selection adds for it (selection.cc): function 0 and device 0
    // of its slot (NCCL looks an RDMA device up there) and, for a virtual function, its PF.
    const auto add = [&](const std::string& link) {
      const auto dir = real_path(link);
      if (!dir || real_devices_.empty() || dir->rfind(real_devices_ + "/", 0) != 0) return;
      const std::string rel = dir->substr(real_devices_.size() + 1);
      const std::string bdf = basename_of(rel), parent = dirname_of(rel);
      if (!is_bdf(bdf) || parent.empty()) return;
      targets_.push_back(rel);
      targets_.push_back(parent + "/" + function0_of(bdf));
      targets_.push_back(parent + "/" + device0_of(bdf));
      const auto pf = real_path(join(*dir, "physfn"));
      if (pf && pf->rfind(real_devices_ + "/", 0) == 0)
        targets_.push_back(pf->substr(real_devices_.size() + 1));
    };
    for (const std::string& u : options_.only_uverbs)
      if (u.find('/') == std::string::npos)
        add(join(sys_, "class/infiniband_verbs/" + u + "/device"));
    for (const std::string& b : options_.only_pci)
      if (is_bdf(b)) add(join(sys_, "bus/pci/devices/" + b));
  }

  // Whether the function or root complex at `rel` (relative to devices/) is read: always without
  // a limit, else only when it is a target or above one.
  bool wanted(const std::string& rel) const {
    if (!limited_) return true;
    for (const std::string& t : targets_)
      if (t == rel ||
          (t.size() > rel.size() && t.compare(0, rel.size(), rel) == 0 && t[rel.size()] == '/'))
        return true;
    return false;
  }

  void walk_pci(const std::string& devices) {
    for (const auto& name : list_dir(devices)) {
      if (!is_root_complex_dir(name) || !wanted(name)) continue;
      std::string dir = join(devices, name);
      if (is_symlink(dir) || !is_dir(dir)) continue;
      RootComplex rc;
      rc.dir = name;
      rc.buses = list_dir(join(dir, "pci_bus"));
      if (rc.buses.empty())
        omit(host_name(dir) +
             "/pci_bus: no bus directory, consumers resolving "
             "BDFs through class/pci_bus will fail");
      snap_.roots.push_back(rc);
      walk_functions(dir, name);
    }
    if (snap_.roots.empty() && !limited_) omit(host_name(devices) + ": no pci* root complex found");
  }

  void walk_functions(const std::string& dir, const std::string& rel) {
    for (const auto& name : list_dir(dir)) {
      if (!is_bdf(name) || !wanted(rel + "/" + name)) continue;
      std::string sub = join(dir, name);
      if (is_symlink(sub) || !is_dir(sub)) continue;
      PciFunction f;
      f.bdf = name;
      f.path = rel + "/" + name;
      read_attrs(sub, std::begin(kPciAttrs), std::end(kPciAttrs), f.attrs, f.refused);
      for (const char* a : kPciCoreAttrs)
        if (!f.attrs.count(a) && !f.refused.count(a))
          omit(host_name(join(sub, a)) + ": missing, left out");
      // The whole config space, extended part included. On a VM each dword of it is a trapped
      // read (about 20 ms for a GPU's 4 KiB), paid once per host snapshot, not per container.
      ReadResult cfg = read_file(join(sub, "config"));
      if (cfg.data && !cfg.data->empty())
        f.config = *cfg.data;
      else
        omit(host_name(join(sub, "config")) + ": missing or empty, hwloc will not see " + name +
             " as a bridge");
      if (auto l = read_link(join(sub, "driver"))) f.driver = basename_of(*l);
      if (auto l = read_link(join(sub, "physfn"))) f.physfn = basename_of(*l);
      f.child_buses = list_dir(join(sub, "pci_bus"));
      snap_.pci.push_back(std::move(f));
      walk_functions(sub, rel + "/" + name);
    }
  }

  // bus/pci/devices must agree with the canonical tree; a disagreement is logged, not fixed.
  void cross_check_bus() {
    std::string bus = join(sys_, "bus/pci/devices");
    if (!is_dir(bus)) {
      omit(host_name(bus) + ": missing (built trees will have it)");
      return;
    }
    auto listed = list_dir(bus);
    for (const auto& f : snap_.pci)
      if (!std::binary_search(listed.begin(), listed.end(), f.bdf))
        omit(host_name(join(bus, f.bdf)) + ": missing although " +
             host_name(join(join(sys_, "devices"), f.path)) +
             " exists; kept (built trees list it)");
    if (limited_) return;  // the links of functions not asked for are not looked at
    for (const auto& name : listed) {
      std::string link = join(bus, name);
      auto target = real_path(link);
      if (!target) {
        omit(host_name(link) + ": dangling link, left out");
        continue;
      }
      if (!snap_.find_pci(name))
        omit(host_name(link) + ": resolves to " + host_name(*target) +
             ", which is not in the devices/pci* tree; left out");
    }
  }

  // With a limited capture, whether `rest` (a path below the function owner_of found) lies in a
  // function the capture did not read, below that one.
  static bool below_unread_function(const std::string& rest) {
    return is_bdf(rest.substr(0, rest.find('/')));
  }

  // The PCI function whose canonical directory contains `abs` (longest match), or nullptr.
  const PciFunction* owner_of(const std::string& abs, std::string* rest) {
    const std::string& devices = real_devices_;
    if (devices.empty() || abs.compare(0, devices.size() + 1, devices + "/") != 0) return nullptr;
    std::string rel = abs.substr(devices.size() + 1);
    const PciFunction* best = nullptr;
    for (const auto& f : snap_.pci) {
      if (rel.size() > f.path.size() && rel.compare(0, f.path.size(), f.path) == 0 &&
          rel[f.path.size()] == '/' && (!best || f.path.size() > best->path.size()))
        best = &f;
    }
    if (best && rest) *rest = rel.substr(best->path.size() + 1);
    return best;
  }

  // An entry of a class directory (class/infiniband/<name>, class/net/<name>): the real directory
  // its link names and the PCI function whose tree holds it (nullptr: none), with the path below
  // that function. nullopt, and an omission, when the link dangles.
  struct ClassEntry {
    std::string link;
    std::string dir;
    const PciFunction* function = nullptr;
    std::string rest;
  };
  std::optional<ClassEntry> class_entry(const std::string& cls, const std::string& name) {
    ClassEntry e;
    e.link = join(cls, name);
    auto dir = real_path(e.link);
    if (!dir) {
      omit(host_name(e.link) + ": dangling link, left out");
      return std::nullopt;
    }
    e.dir = *dir;
    e.function = owner_of(e.dir, &e.rest);
    return e;
  }

  void read_infiniband() {
    std::string cls = join(sys_, "class/infiniband");
    for (const auto& name : list_dir(cls)) {
      const auto e = class_entry(cls, name);
      if (!e) continue;
      const PciFunction* f = e->function;
      if (limited_ && (!f || below_unread_function(e->rest))) continue;  // not asked for
      if (!f || e->rest != "infiniband/" + name) {
        omit(host_name(e->link) + ": not backed by a PCI function (" + host_name(e->dir) +
             "), left out");
        continue;
      }
      IbDevice d;
      d.name = name;
      d.pci = f->bdf;
      read_attrs(e->dir, std::begin(kIbAttrs), std::end(kIbAttrs), d.attrs, d.refused);
      read_ports(e->dir, d);
      read_uverbs(join(join(sys_, "devices"), f->path), d);
      snap_.ib.push_back(std::move(d));
    }
    auto abi = read_file(join(sys_, "class/infiniband_verbs/abi_version"));
    if (abi.data)
      snap_.uverbs_abi_version = *abi.data;
    else if (!snap_.ib.empty())
      omit(host_name(join(sys_, "class/infiniband_verbs/abi_version")) +
           ": missing; libibverbs in sysfs mode lists no device without it");
  }

  void read_ports(const std::string& dir, IbDevice& d) {
    std::string ports = join(dir, "ports");
    for (const auto& pn : list_dir(ports)) {
      IbPort p;
      auto num = parse_index(pn);
      if (!num) {
        omit(host_name(join(ports, pn)) + ": not a port number, left out");
        continue;
      }
      p.num = *num;
      std::string pd = join(ports, pn);
      p.host_path = host_name(real_path(pd).value_or(pd));
      read_attrs(pd, std::begin(kPortAttrs), std::end(kPortAttrs), p.attrs, p.refused);
      if (options_.port_tables) read_tables(pd, p);
      d.ports.push_back(std::move(p));
    }
    if (d.ports.empty()) omit(host_name(ports) + ": no ports");
  }

  // The port directory `pd`'s GID and P_Key tables.
  void read_tables(const std::string& pd, IbPort& p) {
    read_table(
        join(pd, "gids"), p.gid_table_len, p.gids,
        [](const std::string& v) { return trim(v) != "0000:0000:0000:0000:0000:0000:0000:0000"; },
        nullptr);
    int types_len = 0, ndevs_len = 0, pkeys_len = 0;
    auto nonempty = [](const std::string& v) { return !trim(v).empty(); };
    read_table(join(pd, "gid_attrs/types"), types_len, p.gid_types, nonempty, &p.gid_types_refused);
    read_table(join(pd, "gid_attrs/ndevs"), ndevs_len, p.gid_ndevs, nonempty, &p.gid_ndevs_refused);
    read_table(
        join(pd, "pkeys"), pkeys_len, p.pkeys,
        [](const std::string& v) { return trim(v) != "0x0000"; }, nullptr);
    p.pkey_table_len = pkeys_len;
    if (types_len > p.gid_table_len || ndevs_len > p.gid_table_len)
      p.gid_table_len = std::max(types_len, ndevs_len);
    if (p.gid_table_len == 0) omit(host_name(pd) + "/gids: empty or missing GID table");
  }

  // Reads an index-named table directory; `keep` drops default values. Entries the kernel refuses
  // to read (an empty GID slot's type or netdev: ENODATA, EINVAL before Linux 5.10; a GID with no
  // netdev: EINVAL) go into `refused` with their errno; a table without one logs them.
  void read_table(const std::string& dir, int& len, std::map<int, std::string>& out,
                  const std::function<bool(const std::string&)>& keep,
                  std::map<int, int>* refused) {
    len = 0;
    for (const auto& n : list_dir(dir)) {
      auto parsed = parse_index(n);
      if (!parsed) continue;
      int idx = *parsed;
      len = std::max(len, idx + 1);
      ReadResult r = read_file(join(dir, n));
      if (r.data) {
        if (keep(*r.data) && printable(*r.data)) out[idx] = *r.data;
      } else if (refused && is_refusal(r)) {
        (*refused)[idx] = r.error;
      } else {
        omit(host_name(join(dir, n)) + ": unreadable (" + std::strerror(r.error) + ")");
      }
    }
  }

  void read_uverbs(const std::string& pci_dir, IbDevice& d) {
    std::string vdir = join(pci_dir, "infiniband_verbs");
    for (const auto& u : list_dir(vdir)) {
      auto ibdev = read_text(join(join(vdir, u), "ibdev"));
      if (!ibdev || trim(*ibdev) != d.name) continue;
      UverbsDevice v;
      v.name = u;
      read_attrs(join(vdir, u), std::begin(kUverbsAttrs), std::end(kUverbsAttrs), v.attrs,
                 v.refused);
      if (!v.attrs.count("dev"))
        omit(host_name(join(join(vdir, u), "dev")) + ": missing, libibverbs cannot open " + d.name);
      d.verbs = std::move(v);
      return;
    }
    omit(host_name(vdir) + ": no uverbs device for " + d.name + " (not usable for verbs)");
  }

  void read_net() {
    std::string cls = join(sys_, "class/net");
    for (const auto& name : list_dir(cls)) {
      const auto e = class_entry(cls, name);
      if (!e) continue;
      const PciFunction* f = e->function;
      if (!f) continue;  // virtual interface (lo, veth, bridge): nothing to carry
      if (limited_ && below_unread_function(e->rest)) continue;  // not asked for
      NetDevice n;
      n.name = name;
      n.pci = f->bdf;
      n.subpath = e->rest;
      read_attrs(e->dir, std::begin(kNetAttrs), std::end(kNetAttrs), n.attrs, n.refused);
      snap_.net.push_back(std::move(n));
    }
  }

  void read_numa() {
    std::string nodes = join(sys_, "devices/system/node");
    for (const auto& name : list_dir(nodes)) {
      if (name.size() < 5 || name.compare(0, 4, "node") != 0) continue;
      NumaNode n;
      auto id = parse_index(name.substr(4));
      if (!id) continue;
      n.id = *id;
      const char* const attrs[] = {"cpumap", "cpulist"};
      read_attrs(join(nodes, name), std::begin(attrs), std::end(attrs), n.attrs, n.refused);
      if (!n.attrs.count("cpumap"))
        omit(host_name(join(join(nodes, name), "cpumap")) + ": missing");
      snap_.numa.push_back(std::move(n));
    }
  }

  void read_peer_memory() {
    for (const char* m : kPeerMemoryMarkers) {
      auto v = read_text(join(sys_, m));
      if (v && printable(*v)) snap_.peer_memory[m] = *v;
    }
  }

  CaptureOptions options_;
  bool limited_ = false;
  std::vector<std::string> targets_;
  std::string root_;
  std::string sys_;
  std::string real_root_;     // root_ with links resolved, to name paths as the host does
  std::string real_devices_;  // <sys>/devices resolved
  Snapshot snap_;
};

}  // namespace

Snapshot capture(const std::string& root, const CaptureOptions& options) {
  return Capturer(root.empty() ? "/" : root, options).run();
}

}  // namespace gdrproxy::sysfs
