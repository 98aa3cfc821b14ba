// The check registry (see doctor.h).
#include "doctor/doctor.h"

#include <algorithm>

#include "doctor/container.h"
#include "doctor/image.h"
#include "doctor/libraries.h"
#include "doctor/nccl_env.h"
#include "doctor/nvidia.h"
#include "doctor/peer.h"
#include "doctor/rdma.h"

namespace gdrproxy::doctor {

const std::vector<Family>& families() {
  static const std::vector<Family> all = {
      {"nccl",
       "NCCL_IB_HCA, NCCL_IB_GID_INDEX, NCCL_SOCKET_IFNAME, nccl.conf settings, and\n"
       "      NCCL_NET_GDR_LEVEL / NCCL_P2P_LEVEL in words (names or NCCL's old 0=LOC 1=PIX 2=PXB\n"
       "      3=PHB 4=SYS; a value NCCL ignores is a WARN)",
       check_nccl_env},
      {"rdma",
       "uverbs ABI (the core's, and each device's driver ABI against its rdma-core provider's\n"
       "      range: mlx5, rxe, efa, bnxt_re, ...), device nodes, per rail IPv4, ARP sysctls, RoCE "
       "v2 GID",
       check_rdma},
      {"lib",
       "--pid: RDMA/NCCL/UCX/libfabric/CUDA/NIXL libraries mapped, duplicates, private UCX;\n"
       "      without --pid a probe child (killed after 2 s) dlopen()s libibverbs, librdmacm, "
       "libnccl,\n"
       "      libucp, libfabric, libcuda and libnixl and its maps get the same checks "
       "(lib.probe.*)",
       check_libraries},
      {"image",
       "--rootfs: NIXL plugins' DT_NEEDED resolved as ld.so would, against their prefix; UCX,\n"
       "      libfabric, NIXL, NCCL versions against the reference image (older/newer/unknown: "
       "WARN)",
       check_image},
      {"nvidia",
       "kernel module, libcuda against it, dma-buf/peermem, GPUDirect path per GPU against\n"
       "      NCCL_NET_GDR_LEVEL, GPU pairs' PCI paths against NCCL_P2P_LEVEL",
       check_nvidia},
      {"container",
       "pid namespace, --pid ranks' pid/net namespaces and boot ids (NCCL's host id),\n"
       "      pidfd_open/pidfd_getfd, Yama",
       check_container},
      // Last: it compares the facts every family above recorded.
      {"peer", "--peer: rails, HCAs, library versions, NCCL env and boot id against another node",
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
