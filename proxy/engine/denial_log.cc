// See denial_log.h.
#include "proxy/engine/denial_log.h"

namespace gdrproxy::proxy {

bool DenialLog::first(uint32_t tgid, const std::string& device, const std::string& reason) {
  ++total_;
  auto key = std::make_tuple(tgid, device, reason);
  if (seen_.count(key)) {
    ++repeats_;
    return false;
  }
  if (seen_.size() < kMaxKinds) seen_.insert(std::move(key));
  return true;
}

}  // namespace gdrproxy::proxy
