// See device_class.h.
#include "proxy/abi/device_class.h"

namespace gdrproxy::proxy {

const char* device_class_name(DeviceClass c) {
  switch (c) {
    case DeviceClass::kUverbs:
      return "uverbs";
    case DeviceClass::kRdmaCm:
      return "rdma_cm";
    case DeviceClass::kNvidiaFrontend:
      return "nvidia";
    case DeviceClass::kNvidiaUvm:
      return "nvidia-uvm";
    case DeviceClass::kNvidiaCaps:
      return "nvidia-caps";
    case DeviceClass::kUnknown:
      break;
  }
  return "unknown";
}

}  // namespace gdrproxy::proxy
