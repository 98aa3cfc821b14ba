#include "proxy/decode/decoded_call.h"

#include "base/hot_path.h"

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

GDRPROXY_HOT void DecodedCall::clear() {
  device_class = DeviceClass::kUnknown;
  cmd = 0;
  name.clear();
  args.clear();
  malformed.clear();
  keys = PolicyKeys{};
  result_regions = {};
  result_hints.clear();
  render = true;
}

}  // namespace gdrproxy::proxy
