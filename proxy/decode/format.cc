#include "proxy/decode/format.h"

namespace gdrproxy::proxy {

std::string dec(int64_t v) {
  return std::to_string(v);
}

bool load_le(std::span<const uint8_t> bytes, size_t offset, size_t size, uint64_t& out) {
  if (size == 0 || size > 8 || offset > bytes.size() || bytes.size() - offset < size) return false;
  out = 0;
  for (size_t i = 0; i < size; ++i) out |= static_cast<uint64_t>(bytes[offset + i]) << (8 * i);
  return true;
}

}  // namespace gdrproxy::proxy
