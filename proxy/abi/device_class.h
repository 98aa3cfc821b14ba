// The kinds of device node gdrproxy tells apart: each has an ioctl ABI of its own (its decoder,
// its policy table), so a device's class is fixed by its driver (device_drivers.h) and says
// which decoder and which part of the policy judge its calls. kUnknown is a guarded node that is
// never brokered.
#pragma once

#include <cstdint>

namespace gdrproxy::proxy {

enum class DeviceClass : uint8_t {
  kUnknown,
  kUverbs,          // /dev/infiniband/uverbsN
  kRdmaCm,          // /dev/infiniband/rdma_cm
  kNvidiaFrontend,  // /dev/nvidiactl, /dev/nvidiaN (the same escape ABI)
  kNvidiaUvm,       // /dev/nvidia-uvm, /dev/nvidia-uvm-tools
  kNvidiaCaps,      // /dev/nvidia-caps/*
};

// The class's name in policies and traces ("uverbs", "nvidia", ...; "unknown").
const char* device_class_name(DeviceClass c);

}  // namespace gdrproxy::proxy
