// NVIDIA checks: the kernel module (version, open or proprietary), libcuda loaded at run time
// against it, the GPUDirect RDMA mechanisms (dma-buf, nvidia-peermem, at the paths NCCL checks),
// and for each GPU the effective GPUDirect path to its nearest NIC with the PCI path type NCCL
// derives from sysfs (sysfs/nccl_view.h).
//
// The idea not to miss: "GPUDirect RDMA" needs both a mechanism and a topology. NCCL uses it for a
// GPU-NIC pair only when the pair's PCI path is no farther than NCCL_NET_GDR_LEVEL (PXB by
// default) and the pair has dma-buf (open module, kernel >= 5.12) or peermem; otherwise it
// silently stages through host memory. Without libcuda the driver version is unknown: that is a
// WARN that says so, never a pass.
#pragma once

#include <string>

#include "doctor/context.h"
#include "doctor/report.h"

namespace gdrproxy::doctor {

struct NvidiaModule {
  bool loaded = false;
  std::string version;  // "580.95.05"
  bool open = false;    // the open kernel module (Dual MIT/GPL)
  std::string source;   // where it was read
};
NvidiaModule read_nvidia_module(const Context& ctx);

struct CudaDriver {
  bool loaded = false;
  std::string error;         // dlerror() or the failing call
  int api_version = 0;       // cuDriverGetVersion: 12080 = CUDA 12.8
  std::string path;          // the file dlopen() loaded, symlinks resolved
  std::string file_version;  // "580.95.05" from libcuda.so.580.95.05
};
// dlopen()s `name` in this process, asks cuDriverGetVersion, closes it again.
CudaDriver probe_libcuda(const std::string& name);

void check_nvidia(const Context& ctx, Report& report);

}  // namespace gdrproxy::doctor
