// The kernel drivers whose device nodes gdrproxy guards, by the names they register in
// /proc/devices (character majors) and /proc/misc (misc minors). A node is recognised by its
// device number's driver, never by the path it happens to have: a node of one of these drivers
// found anywhere under /dev, or made with mknod, is a catalogued device, and one that is not in
// the list of brokerable kinds can never be granted.
#pragma once

#include <string_view>

#include "proxy/abi/device_class.h"

namespace gdrproxy::proxy {

struct GuardedDriver {
  std::string_view name;     // as in /proc/devices or /proc/misc
  bool misc;                 // a misc device (major 10, its own minor)
  DeviceClass device_class;  // kUnknown: guarded, never brokered
};

inline constexpr GuardedDriver kGuardedDrivers[] = {
    // RDMA (drivers/infiniband/core): uverbs and umad share major 231 under two names.
    {"infiniband_verbs", false, DeviceClass::kUverbs},
    {"infiniband_mad", false, DeviceClass::kUnknown},
    {"rdma_cm", true, DeviceClass::kRdmaCm},
    // NVIDIA (open-gpu-kernel-modules): nvidiactl, nvidiaN and nvidia-modeset share the
    // frontend's major 195.
    {"nvidia-frontend", false, DeviceClass::kNvidiaFrontend},
    {"nvidia", false, DeviceClass::kNvidiaFrontend},
    {"nvidia-uvm", false, DeviceClass::kNvidiaUvm},
    {"nvidia-caps", false, DeviceClass::kNvidiaCaps},
    {"nvidia-caps-imex-channels", false, DeviceClass::kUnknown},
    {"nvidia-nvswitch", false, DeviceClass::kUnknown},
    {"nvidia-nvlink", false, DeviceClass::kUnknown},
};

// Majors the kernel fixes for these drivers (IB_UVERBS_MAJOR, NV_MAJOR_DEVICE_NUMBER): a
// container's device cgroup denies them even on a host where the driver is not loaded yet.
inline constexpr unsigned kUverbsMajor = 231;
inline constexpr unsigned kNvidiaFrontendMajor = 195;

// The frontend's fixed minors (nv.c): nvidiactl is 255, nvidia-modeset 254; GPUs are 0..253.
inline constexpr unsigned kNvidiaCtlMinor = 255;
inline constexpr unsigned kNvidiaModesetMinor = 254;

}  // namespace gdrproxy::proxy
