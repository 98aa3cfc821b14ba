// The driver ABI range each rdma-core verbs provider accepts, as data, and how a device is matched
// to its provider from sysfs.
//
// The idea not to miss: libibverbs checks a device twice. The uverbs core ABI
// (/sys/class/infiniband_verbs/abi_version) against its own range, and then the device's driver
// ABI (/sys/class/infiniband_verbs/uverbsN/abi_version) against the range its provider declares
// (verbs_device_ops .match_min_abi_version/.match_max_abi_version). A device outside its
// provider's range is silently dropped from ibv_get_device_list() with only a warning on stderr,
// so the job sees "no RDMA device" on a node that has one.
#pragma once

#include <string>
#include <vector>

namespace gdrproxy::doctor {

struct VerbsProvider {
  const char* name;  // rdma-core's provider ("mlx5")
  int min_abi;
  int max_abi;
  // Kernel drivers whose devices the provider serves, matched as prefixes of the driver name
  // sysfs links (device/driver: "mlx5_core"; auxiliary drivers carry a suffix: "irdma.gen_2").
  std::vector<std::string> kernel_drivers;
  // The kernel's default ibdev name prefix ("mlx5_"), used only when the driver link names no
  // provider (rxe and siw sit on a netdev whose own NIC driver the link shows).
  std::vector<std::string> ibdev_prefixes;
};

const std::vector<VerbsProvider>& verbs_providers();

struct ProviderMatch {
  const VerbsProvider* provider = nullptr;  // nullptr: no provider known
  std::string how;  // "driver mlx5_core" or "name prefix rxe" (for the report)
};
// The provider of a device given its kernel driver name ("" when unknown) and ibdev name.
ProviderMatch match_verbs_provider(const std::string& kernel_driver, const std::string& ibdev);

}  // namespace gdrproxy::doctor
