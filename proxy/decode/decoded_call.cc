#include "proxy/decode/decoded_call.h"

#include "base/hot_path.h"

namespace gdrproxy::proxy {

GDRPROXY_HOT void DecodedCall::clear() {
  device_class = DeviceClass::kUnknown;
  cmd = 0;
  name.clear();
  args.clear();
  malformed.clear();
  keys = PolicyKeys{};
  result_regions = {};
  result_hints.clear();
  nvidia_abi = nullptr;
  render = true;
}

}  // namespace gdrproxy::proxy
