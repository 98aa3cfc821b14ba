// A uverbs node's provider from sysfs (see uverbs_provider.h).
#include "proxy/devices/uverbs_provider.h"

#include <rdma/ib_user_ioctl_verbs.h>
#include <sys/sysmacros.h>

#include <filesystem>
#include <fstream>

#include "proxy/abi/uverbs_providers.h"

namespace gdrproxy::proxy {
namespace {

// Kernel drivers (PCI drivers of the device the IB device hangs off, or the RDMA module's own
// auxiliary driver, whose sysfs name is "<module>.<name>") and the provider they serve.
struct KernelDriver {
  std::string_view name;
  uint32_t provider;
};
constexpr KernelDriver kKernelDrivers[] = {
    {"mlx5_core", RDMA_DRIVER_MLX5},
    {"mlx5_ib", RDMA_DRIVER_MLX5},
    {"mlx4_core", RDMA_DRIVER_MLX4},
    {"mlx4_ib", RDMA_DRIVER_MLX4},
    {"efa", RDMA_DRIVER_EFA},
    {"bnxt_re", RDMA_DRIVER_BNXT_RE},
    {"bnxt_en", RDMA_DRIVER_BNXT_RE},
    {"irdma", RDMA_DRIVER_IRDMA},
    {"ice", RDMA_DRIVER_IRDMA},   // E810: irdma's IB device hangs off the ice PCI function
    {"i40e", RDMA_DRIVER_IRDMA},  // X722 (irdma gen 1, formerly i40iw)
    {"i40iw", RDMA_DRIVER_IRDMA},
    {"hns3", RDMA_DRIVER_HNS},
    {"hns_roce_hw_v2", RDMA_DRIVER_HNS},
    {"qede", RDMA_DRIVER_QEDR},
    {"qedr", RDMA_DRIVER_QEDR},
    {"vmw_pvrdma", RDMA_DRIVER_VMW_PVRDMA},
    {"erdma", RDMA_DRIVER_ERDMA},
    {"mana", uverbs::kRdmaDriverMana},
    {"mana_ib", uverbs::kRdmaDriverMana},
    {"ionic", uverbs::kRdmaDriverIonic},
    {"ionic_rdma", uverbs::kRdmaDriverIonic},
    {"cxgb4", RDMA_DRIVER_CXGB4},
    {"iw_cxgb4", RDMA_DRIVER_CXGB4},
    {"ib_mthca", RDMA_DRIVER_MTHCA},
    {"be2net", RDMA_DRIVER_OCRDMA},
    {"ocrdma", RDMA_DRIVER_OCRDMA},
    {"hfi1", RDMA_DRIVER_HFI1},
    {"ib_qib", RDMA_DRIVER_QIB},
    {"rdma_rxe", RDMA_DRIVER_RXE},
    {"siw", RDMA_DRIVER_SIW},
};

}  // namespace

uint32_t provider_of_kernel_driver(std::string_view driver) {
  // An auxiliary driver is "<module>.<name>": its module names the provider.
  if (const size_t dot = driver.find('.'); dot != std::string_view::npos)
    driver = driver.substr(0, dot);
  for (const auto& d : kKernelDrivers)
    if (d.name == driver) return d.provider;
  return 0;
}

uint32_t uverbs_provider_of(const std::string& sys_root, dev_t rdev) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string want = std::to_string(major(rdev)) + ":" + std::to_string(minor(rdev));
  for (const auto& e : fs::directory_iterator(sys_root + "/class/infiniband_verbs", ec)) {
    std::ifstream dev(e.path() / "dev");
    std::string got;
    if (!(dev >> got) || got != want) continue;
    const fs::path driver = fs::read_symlink(e.path() / "device" / "driver", ec);
    if (ec) return 0;
    return provider_of_kernel_driver(driver.filename().string());
  }
  return 0;
}

}  // namespace gdrproxy::proxy
