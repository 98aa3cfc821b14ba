// The check registry (see doctor.h).
#include "harness/doctor/doctor.h"

#include <algorithm>

#include "harness/doctor/container.h"
#include "harness/doctor/image.h"
#include "harness/doctor/libraries.h"
#include "harness/doctor/nccl_env.h"
#include "harness/doctor/nvidia.h"
#include "harness/doctor/peer.h"
#include "harness/doctor/rdma.h"

namespace gdrproxy::doctor {

const std::vector<Family>& families() {
  static const std::vector<Family> all = {
      {"nccl", "NCCL_IB_HCA, NCCL_IB_GID_INDEX, NCCL_SOCKET_IFNAME and nccl.conf settings",
       check_nccl_env},
      {"rdma", "uverbs ABI and device nodes, per rail IPv4, ARP sysctls and RoCE v2 GID",
       check_rdma},
      {"lib", "--pid: RDMA/NCCL/UCX/libfabric/CUDA/NIXL libraries mapped, duplicates, private UCX",
       check_libraries},
      {"image", "--rootfs: NIXL plugins' DT_NEEDED resolved as ld.so would, against their prefix",
       check_image},
      {"nvidia", "kernel module, libcuda against it, dma-buf/peermem, GPUDirect path per GPU",
       check_nvidia},
      {"container", "pid namespace, ranks' pid/net namespaces, pidfd_open/pidfd_getfd, Yama",
       check_container},
      // Last: it compares the facts every family above recorded.
      {"peer", "--peer: rails, HCAs, library versions and NCCL env against another node",
       check_peer},
  };
  return all;
}

Report run_doctor(const Context& ctx, const std::vector<std::string>& only) {
  Report report;
  for (const auto& f : families()) {
    if (!only.empty() && std::find(only.begin(), only.end(), f.name) == only.end()) continue;
    try {
      f.run(ctx, report);
    } catch (const std::exception& e) {
      report.warn(std::string(f.name) + ".error", std::string("could not check: ") + e.what(),
                  "see the message; the other families still ran");
    }
  }
  return report;
}

}  // namespace gdrproxy::doctor
