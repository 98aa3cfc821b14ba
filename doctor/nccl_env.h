// NCCL environment checks: the settings NCCL will read (environment, ~/.nccl.conf,
// /etc/nccl.conf) checked against the RDMA devices and interfaces of this node.
//
// The idea not to miss: without a leading '=', NCCL matches each NCCL_IB_HCA and
// NCCL_SOCKET_IFNAME entry as a *prefix* (strncmp on the entry's length), so "mlx5_1" also
// selects mlx5_10..mlx5_19. An entry that names a device exactly and also prefixes others is
// almost always a mistake; '=' makes every entry exact, '^' turns the list into an exclusion.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "doctor/context.h"
#include "doctor/report.h"

namespace gdrproxy::doctor {

struct NcclSetting {
  std::string value;
  std::string origin;  // "environment", "/etc/nccl.conf", "<home>/.nccl.conf"
};
// Every NCCL_* setting, the way NCCL resolves them: the environment wins, then ~/.nccl.conf,
// then /etc/nccl.conf (NCCL sets the files' values without overwriting).
std::map<std::string, NcclSetting> nccl_settings(const Context& ctx);

// NCCL_IB_HCA / NCCL_SOCKET_IFNAME syntax: [^][=]name[:port[:...]],...
struct NcclDeviceList {
  bool exclude = false;
  bool exact = false;
  struct Entry {
    std::string name;
    int port = -1;  // -1: every port
  };
  std::vector<Entry> entries;
};
NcclDeviceList parse_nccl_device_list(const std::string& value);
// The names of `candidates` that `entry` selects under `list`'s matching rule.
std::vector<std::string> nccl_matches(const NcclDeviceList& list, const std::string& entry,
                                      const std::vector<std::string>& candidates);

void check_nccl_env(const Context& ctx, Report& report);

}  // namespace gdrproxy::doctor
