// rdma-core's providers and their driver ABI ranges (see verbs_providers.h).
#include "doctor/verbs_providers.h"

#include <climits>

namespace gdrproxy::doctor {

// From linux-rdma/rdma-core (master of 2026-08, 691953d8): each providers/<name>/*.c
// `static const struct verbs_device_ops <name>_dev_ops` with its .match_min_abi_version and
// .match_max_abi_version, the constants from kernel-headers/rdma/<name>-abi.h or the provider's
// own abi header (mlx5/mlx5-abi.h MLX5_UVERBS_{MIN,MAX}_ABI_VERSION 1..1, mlx4/mlx4-abi.h 2..4,
// irdma/abi.h 0..5, rxe/rxe.c 1..2 on 64-bit, vmw_pvrdma-abi.h 3, qedr/qelr_abi.h 8,
// ocrdma/ocrdma_abi.h 2; the others 1 or 0..INT_MAX as listed).
const std::vector<VerbsProvider>& verbs_providers() {
  static const std::vector<VerbsProvider> all = {
      {"mlx5", 1, 1, {"mlx5_core", "mlx5_ib"}, {"mlx5_"}},
      {"mlx4", 2, 4, {"mlx4_core", "mlx4_ib"}, {"mlx4_"}},
      {"rxe", sizeof(void*) == 8 ? 1 : 2, 2, {"rdma_rxe"}, {"rxe"}},
      {"siw", 1, 1, {"siw"}, {"siw"}},
      {"efa", 1, 1, {"efa"}, {"efa_"}},
      {"bnxt_re", 1, 1, {"bnxt_re"}, {"bnxt_re"}},
      {"irdma", 0, 5, {"irdma", "i40iw"}, {"irdma"}},
      {"mana", 1, 1, {"mana_ib"}, {"mana_"}},
      {"erdma", 0, 1, {"erdma"}, {"erdma_"}},
      {"ionic", 1, 1, {"ionic_rdma", "ionic"}, {"ionic_"}},
      {"hns", 0, INT_MAX, {"hns_roce", "hns"}, {"hns_"}},
      {"qedr", 8, 8, {"qedr", "qede"}, {"qedr"}},
      {"ocrdma", 2, 2, {"ocrdma"}, {"ocrdma"}},
      {"pvrdma", 3, 3, {"vmw_pvrdma"}, {"vmw_pvrdma"}},
      {"mthca", 0, 1, {"ib_mthca"}, {"mthca"}},
      {"cxgb4", 0, INT_MAX, {"iw_cxgb4", "cxgb4"}, {"cxgb4_"}},
      {"hfi1verbs", 0, INT_MAX, {"hfi1"}, {"hfi1_"}},
      {"ipathverbs", 0, INT_MAX, {"ib_qib"}, {"qib"}},
  };
  return all;
}

ProviderMatch match_verbs_provider(const std::string& kernel_driver, const std::string& ibdev) {
  // The longest matching prefix wins ("irdma" must not take "i40iw"'s devices and the like).
  auto best = [](const std::string& s, auto member) {
    const VerbsProvider* hit = nullptr;
    size_t len = 0;
    for (const auto& p : verbs_providers())
      for (const auto& prefix : p.*member)
        if (!s.empty() && s.compare(0, prefix.size(), prefix) == 0 && prefix.size() > len)
          hit = &p, len = prefix.size();
    return hit;
  };
  if (const VerbsProvider* p = best(kernel_driver, &VerbsProvider::kernel_drivers))
    return {p, "driver " + kernel_driver};
  if (const VerbsProvider* p = best(ibdev, &VerbsProvider::ibdev_prefixes))
    return {p, "name " + ibdev};
  return {};
}

}  // namespace gdrproxy::doctor
