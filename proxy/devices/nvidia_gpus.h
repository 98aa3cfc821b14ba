// Which GPU an NVIDIA device instance is. The idea not to miss: a tenant names a GPU to the
// driver by *device instance* (NV01_DEVICE_0's deviceId, sent through /dev/nvidiactl, which
// carries no GPU identity), and only the driver knows which /dev/nvidiaN that instance is at this
// moment (instances are given out as GPUs are attached). So the supervisor asks the driver itself,
// as a client of its own: CARD_INFO gives each GPU's id and minor number, and
// NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2 gives an attached GPU's device instance.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gdrproxy::proxy {

struct NvidiaGpu {
  uint32_t gpu_id = 0;
  uint32_t minor = 0;                       // of /dev/nvidiaN
  std::optional<uint32_t> device_instance;  // unset while the GPU is not attached
};

// Asks the driver behind `ctl_path` (/dev/nvidiactl) for every GPU and its device instance.
// Returns nullopt and sets `why` when the driver does not answer (not NVIDIA's, or refused).
std::optional<std::vector<NvidiaGpu>> query_nvidia_gpus(const std::string& ctl_path,
                                                        std::string_view driver_version,
                                                        std::string& why);

// The GPU that device instance `instance` is among `gpus`, or nullptr.
const NvidiaGpu* gpu_of_device_instance(const std::vector<NvidiaGpu>& gpus, uint32_t instance);

// A GPU as the driver lists it in /proc/driver/nvidia/gpus/<bdf>/information: what ties a
// /dev/nvidiaN (its "Device Minor") to its PCI function and UUID, with no call into the driver.
struct ProcGpu {
  unsigned minor = 0;
  std::string uuid, bdf;
};
// Every GPU listed under `proc_root` (normally /proc), by minor; empty without a driver.
std::vector<ProcGpu> nvidia_gpus_in_proc(const std::string& proc_root);

}  // namespace gdrproxy::proxy
