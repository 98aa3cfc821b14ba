// RDMA devices moved with their rails in exclusive mode (see rdma_netns.h).
#include "netns/rdma_netns.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <optional>

#include "base/error.h"
#include "base/escape.h"

namespace gdrproxy::netns {
namespace {

std::string guid_text(uint64_t guid) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(guid));
  return buf;
}

std::optional<RdmaDevice> by_index(const std::vector<RdmaDevice>& devs, uint32_t index) {
  for (const auto& d : devs)
    if (d.index == index) return d;
  return std::nullopt;
}

// A port of `ibdev` on `netdev`, as `nl`'s namespace sees them (a netdev of another namespace
// is reported to none but its own).
bool on_netdev(const RdmaNl& nl, const std::string& ibdev, const std::string& netdev) {
  for (const auto& p : rdma_port_netdevs(nl))
    if (p.ibdev == ibdev && p.netdev == netdev) return true;
  return false;
}

// Why the kernel refuses to move a device, in the words an operator needs.
std::string refusal(int error, const std::string& message) {
  std::string out = "the kernel refused: " + kernel_reason(error, message);
  if (error == EOPNOTSUPP)
    out +=
        "; the kernel moves an RDMA device between network namespaces only in exclusive RDMA "
        "netns mode and only if its driver can disassociate user contexts";
  return out;
}

}  // namespace

Json rdma_devices_on(const RdmaNl& nl, int ifindex, const std::vector<std::string>& except) {
  Json out = Json::array();
  std::vector<uint32_t> seen;
  const std::vector<RdmaDevice> devs = rdma_devices(nl);
  for (const auto& p : rdma_port_netdevs(nl)) {
    if (p.ifindex != ifindex || p.ifindex == 0) continue;
    if (std::find(except.begin(), except.end(), p.ibdev) != except.end()) continue;
    if (std::find(seen.begin(), seen.end(), p.dev_index) != seen.end()) continue;
    seen.push_back(p.dev_index);
    const auto d = by_index(devs, p.dev_index);
    out.push_back(Json{
        {"name", p.ibdev}, {"index", p.dev_index}, {"node_guid", guid_text(d ? d->node_guid : 0)}});
  }
  return out;
}

void move_rdma_devices(const Json& rec, const NetnsFd& target, std::ostream& log) {
  const Json& devs = rec.value("rdma_devices", Json::array());
  if (devs.empty()) return;
  const std::string rail = rec.at("name");
  const RdmaNl here;
  for (const auto& d : devs) {
    const std::string name = d.at("name");
    std::string message;
    const int error = set_rdma_device_netns(here, d.at("index").get<uint32_t>(), target, message);
    if (error != 0)
      throw Error(rail + ": cannot move its RDMA device " + name + " into " + target.describe() +
                  " with it: " + refusal(error, message));
    log << rail << ": RDMA device " << name << " moved with it into " << target.describe()
        << " (exclusive RDMA netns mode)\n";
  }
}

void place_soft_roce(const std::string& ibdev, const std::string& netdev, const NetnsFd& where,
                     std::ostream& log) {
  // Shared mode, or registered where its rail is: nothing to do. A device of that name elsewhere
  // there (a tenant's) is not it: its port has no netdev there.
  if (on_netdev(RdmaNl::open_in(where), ibdev, netdev)) return;
  const RdmaNl here;
  // Here, its port's netdev is in `where`, so none is reported.
  std::optional<RdmaPortNetdev> made;
  for (const auto& p : rdma_port_netdevs(here))
    if (p.ibdev == ibdev && p.netdev.empty()) made = p;
  if (!made)
    throw Error(netdev + ": soft-RoCE device " + ibdev + " was made, but neither " +
                where.describe() + " nor this network namespace sees it on " + netdev +
                " (rxe registers it in the initial network namespace)");
  std::string message;
  const int error = set_rdma_device_netns(here, made->dev_index, where, message);
  if (error != 0)
    throw Error(netdev + ": cannot move its soft-RoCE device " + ibdev + " into " +
                where.describe() + " with it: " + refusal(error, message));
  log << netdev << ": soft-RoCE device " << ibdev << " moved into " << where.describe()
      << " (exclusive RDMA netns mode; rxe made it in this namespace)\n";
}

int return_rdma_devices(const Json& rec, const NetnsFd& host, const NetnsFd* target,
                        std::ostream& log) {
  const Json& devs = rec.value("rdma_devices", Json::array());
  if (devs.empty()) return 0;
  const std::string rail = rec.at("name");
  int problems = 0;
  const auto here = RdmaNl::open_if_present();
  if (!here) {
    log << "error: " << rail << ": the journal lists RDMA devices moved with it, but this kernel "
        << "has no RDMA netlink now (ib_core unloaded?); not given back\n";
    return static_cast<int>(devs.size());
  }
  std::optional<RdmaNl> there;
  if (target) {
    try {
      there.emplace(RdmaNl::open_in(*target));
    } catch (const Error& e) {
      log << "warning: " << rail << ": cannot ask " << target->describe() << " for its RDMA "
          << "devices: " << e.what() << "\n";
    }
  }
  for (const auto& d : devs) {
    const std::string name = d.at("name");
    const uint32_t index = d.at("index");
    const std::string guid = d.value("node_guid", "");
    auto found = by_index(rdma_devices(*here), index);
    const bool in_host = found.has_value();
    if (!found && there) found = by_index(rdma_devices(*there), index);
    if (!found) {
      log << "error: " << rail << ": RDMA device " << name << " (index " << index
          << ") is neither in this network namespace nor in "
          << (there ? target->describe() : std::string("the target, which is gone"))
          << " (a namespace that dies gives its RDMA devices to the initial namespace: run "
             "restore there), or it was unregistered\n";
      ++problems;
      continue;
    }
    if (!guid.empty() && guid_text(found->node_guid) != guid) {
      log << "error: " << rail << ": refused RDMA device index " << index << " ("
          << gdrproxy::quote_text(found->name) << "): its node GUID is "
          << guid_text(found->node_guid) << ", not the journaled " << guid << " of " << name
          << "; not touched\n";
      ++problems;
      continue;
    }
    if (!in_host) {
      std::string message;
      const int error = set_rdma_device_netns(*there, index, host, message);
      if (error != 0) {
        log << "error: " << rail << ": cannot move its RDMA device " << name << " back from "
            << target->describe() << ": " << refusal(error, message) << "\n";
        ++problems;
        continue;
      }
      log << rail << ": RDMA device " << name << " moved back from " << target->describe() << "\n";
    }
    if (found->name != name) {
      std::string message;
      const int error = rename_rdma_device(*here, index, name, message);
      if (error != 0) {
        log << "error: " << rail << ": RDMA device " << name << " is back as "
            << gdrproxy::quote_text(found->name)
            << " and cannot be renamed back: " << kernel_reason(error, message) << "\n";
        ++problems;
        continue;
      }
      log << rail << ": RDMA device " << name << " renamed back from "
          << gdrproxy::quote_text(found->name) << "\n";
    }
  }
  return problems;
}

}  // namespace gdrproxy::netns
