// Selection closure; see selection.h.
#include "sysfs/selection.h"

#include <algorithm>

#include "base/error.h"
#include "base/file_io.h"
#include "sysfs/bdf.h"

namespace gdrproxy::sysfs {

bool is_gpu(const PciFunction& f) {
  auto cls = f.attrs.find("class");
  auto vendor = f.attrs.find("vendor");
  return cls != f.attrs.end() && trim(cls->second).rfind("0x03", 0) == 0 &&
         vendor != f.attrs.end() && trim(vendor->second) == "0x10de";
}

namespace {

std::string link_layer(const IbPort& p) {
  auto it = p.attrs.find("link_layer");
  return it == p.attrs.end() ? "" : trim(it->second);
}

// Absent entries are zero (see IbPort); a hand-written snapshot may also spell a zero GID out.
bool nonzero_gid(const std::string& gid) {
  std::string g = trim(gid);
  return !g.empty() && g != "0000:0000:0000:0000:0000:0000:0000:0000";
}

}  // namespace

GidRule gid_rule(const IbPort& p) {
  return link_layer(p) == "Ethernet" ? GidRule::kNonZeroWithNetdev : GidRule::kNonZero;
}

bool port_has_usable_gid(const IbPort& p) {
  bool need_netdev = gid_rule(p) == GidRule::kNonZeroWithNetdev;
  for (const auto& [i, gid] : p.gids) {
    if (!nonzero_gid(gid)) continue;
    if (!need_netdev) return true;
    auto nd = p.gid_ndevs.find(i);
    if (nd != p.gid_ndevs.end() && !trim(nd->second).empty()) return true;
  }
  return false;
}

bool has_usable_gid(const IbDevice& d) {
  return std::any_of(d.ports.begin(), d.ports.end(), port_has_usable_gid);
}

std::string unusable_gid_reason(const IbDevice& d) {
  if (d.ports.empty()) return "no port";
  if (has_usable_gid(d)) return "";
  std::string why;
  for (const auto& p : d.ports) {
    std::string n = std::to_string(p.num), ll = link_layer(p);
    if (!why.empty()) why += ", ";
    if (gid_rule(p) == GidRule::kNonZeroWithNetdev)
      why += "RoCE (Ethernet) port " + n + " has no non-zero GID bound to a netdev";
    else if (ll == "InfiniBand")
      why += "InfiniBand port " + n + " has no non-zero GID";
    else
      why += "port " + n + (ll.empty() ? " (no link layer" : " (link layer " + ll) +
             ", ruled as InfiniBand) has no non-zero GID";
  }
  return why;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  if (s.empty() || s == "none") return out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    std::string item = trim(s.substr(i, j - i));
    if (!item.empty()) out.push_back(item);
    i = j + 1;
  }
  return out;
}

namespace {

void add_with_ancestors(const Snapshot& s, const std::string& bdf, std::set<std::string>& out) {
  const PciFunction* f = s.find_pci(bdf);
  if (!f) return;
  // Every BDF component of the canonical path is an ancestor bridge (or the function itself).
  size_t i = 0;
  const std::string& p = f->path;
  while (i < p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string::npos) j = p.size();
    std::string comp = p.substr(i, j - i);
    if (is_bdf(comp)) out.insert(comp);
    i = j + 1;
  }
}

// `rdma`: the function carries an RDMA device, which NCCL looks up as device 00 function 0.
void add_function(const Snapshot& s, const std::string& bdf, bool rdma,
                  std::set<std::string>& out) {
  add_with_ancestors(s, bdf, out);
  add_with_ancestors(s, function0_of(bdf), out);
  if (rdma) add_with_ancestors(s, device0_of(bdf), out);
  if (const PciFunction* f = s.find_pci(bdf); f && !f->physfn.empty())
    add_with_ancestors(s, f->physfn, out);
}

}  // namespace

Selection select(const Snapshot& s, const SelectionRequest& req) {
  Selection sel;
  // GPUs
  if (req.gpus_given) {
    for (const auto& g : req.gpus) {
      std::string bdf = normalize_bdf(g);
      const PciFunction* f = s.find_pci(bdf);
      if (!f) throw Error("GPU " + g + " is not a PCI function of the snapshot");
      if (!is_gpu(*f))
        sel.notes.push_back(bdf + ": selected as a GPU but its class is " +
                            trim(f->attrs.count("class") ? f->attrs.at("class") : "unknown"));
      sel.gpus.push_back(bdf);
    }
  } else {
    for (const auto& f : s.pci)
      if (is_gpu(f)) sel.gpus.push_back(f.bdf);
  }
  // NICs, as PCI functions.
  std::vector<std::string> fns;
  std::set<std::string> named_ib;  // with --nics, the only RDMA devices exposed
  if (req.nics_given) {
    for (const auto& n : req.nics) {
      if (const IbDevice* d = s.find_ib(n)) {
        if (std::string why = unusable_gid_reason(*d); !why.empty())
          sel.notes.push_back(n + ": no usable GID: " + why + "; exposed because it was asked for");
        named_ib.insert(d->name);
        fns.push_back(d->pci);
      } else if (const NetDevice* nd = s.find_net(n)) {
        fns.push_back(nd->pci);
      } else {
        throw Error("NIC " + n +
                    " is neither an RDMA device nor a PCI-backed interface "
                    "of the snapshot");
      }
    }
  } else {
    for (const auto& d : s.ib) {
      if (std::string why = unusable_gid_reason(d); why.empty())
        fns.push_back(d.pci);
      else
        sel.notes.push_back(d.name + ": no usable GID: " + why +
                            "; left out (name it in --nics to expose it anyway)");
    }
  }
  for (const auto& f : fns)
    if (std::find(sel.nic_functions.begin(), sel.nic_functions.end(), f) == sel.nic_functions.end())
      sel.nic_functions.push_back(f);
  for (const auto& g : sel.gpus) add_function(s, g, false, sel.pci);
  for (const auto& f : sel.nic_functions) {
    bool rdma =
        std::any_of(s.ib.begin(), s.ib.end(), [&](const IbDevice& d) { return d.pci == f; });
    add_function(s, f, rdma, sel.pci);
  }
  for (const auto& d : s.ib) {
    if (std::find(sel.nic_functions.begin(), sel.nic_functions.end(), d.pci) ==
        sel.nic_functions.end())
      continue;
    // A granted function may carry RDMA devices that were not granted: a software one (siw on
    // the NIC's netdev hangs off the NIC's PCI function, as would rxe on a driver that gave it a
    // parent), or a second device. Only the named ones are the grant.
    if (req.nics_given && !named_ib.count(d.name)) {
      sel.notes.push_back(d.name + ": on " + d.pci +
                          " with a selected NIC but not named in --nics; left out");
      continue;
    }
    sel.ib.push_back(&d);
  }
  for (const auto& n : s.net)
    if (std::find(sel.nic_functions.begin(), sel.nic_functions.end(), n.pci) !=
        sel.nic_functions.end())
      sel.net.push_back(&n);
  return sel;
}

}  // namespace gdrproxy::sysfs
