// RDMA netlink view against sysfs (see rdma_netlink.h).
#include "doctor/rdma_netlink.h"

#include <algorithm>
#include <set>

#include "base/error.h"
#include "base/file_io.h"
#include "base/lists.h"
#include "netns/rdma_nl.h"

namespace gdrproxy::doctor {
namespace {}  // namespace

NldevView query_nldev() {
  NldevView view;
  try {
    const netns::RdmaNl nl;
    for (const auto& d : netns::rdma_devices(nl)) view.devices.push_back(d.name);
    std::sort(view.devices.begin(), view.devices.end());
    view.netns_mode = netns::rdma_netns_mode(nl);
    view.ok = true;
  } catch (const Error& e) {
    view.error = e.what();
  }
  return view;
}

void compare_nldev(const Context& ctx, const NldevView& view, Report& report) {
  if (!view.ok) {
    report.warn("rdma.netlink",
                "cannot ask RDMA netlink (" + view.error +
                    "): devices of this network namespace not compared with sysfs",
                "load ib_core (ib_uverbs), or run where RDMA devices exist");
    return;
  }
  const auto listed = list_dir(ctx.sysfs_root + "/class/infiniband");
  const std::set<std::string> in_sysfs(listed.begin(), listed.end());
  const std::set<std::string> in_nl(view.devices.begin(), view.devices.end());
  std::set<std::string> only_sysfs, only_nl;
  for (const auto& d : in_sysfs)
    if (!in_nl.count(d)) only_sysfs.insert(d);
  for (const auto& d : in_nl)
    if (!in_sysfs.count(d)) only_nl.insert(d);
  const std::string mode = view.netns_mode == netns::RdmaNetnsMode::kUnknown
                               ? "unknown"
                               : netns::to_string(view.netns_mode);
  report.facts()["rdma_netns_mode"] = mode;
  if (!only_sysfs.empty())
    report.fail("rdma.netlink",
                "sysfs shows " + join_list(only_sysfs) +
                    " that this network namespace's RDMA netlink does not (netns mode " + mode +
                    ")",
                "rebuild the synthetic /sys from the granted devices, or in exclusive mode move "
                "the device here (rdma dev set DEV netns NS)");
  else if (!only_nl.empty())
    report.warn("rdma.netlink",
                "RDMA netlink has " + join_list(only_nl) +
                    " that sysfs does not show (netns mode " + mode +
                    "): libibverbs will not find them",
                "include them in the container's sysfs (gdrproxy sysfs build) or drop the grant");
  else
    report.pass("rdma.netlink", std::to_string(in_nl.size()) +
                                    " RDMA device(s) alike in netlink and sysfs; netns mode " +
                                    mode);
}

void check_rdma_netlink(const Context& ctx, Report& report) {
  // Netlink answers for this node only: a captured tree (--sysfs-root) is not compared with it.
  if (ctx.sysfs_root != "/sys") return;
  compare_nldev(ctx, query_nldev(), report);
}

}  // namespace gdrproxy::doctor
