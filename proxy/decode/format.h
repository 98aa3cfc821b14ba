// Small formatting helpers shared by the decoders (numbers as the trace shows them; hex is
// base/hex.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>

namespace gdrproxy::proxy {

std::string dec(int64_t v);

// Little-endian load of `size` bytes (1, 2, 4 or 8) at `offset`; false when out of range.
bool load_le(std::span<const uint8_t> bytes, size_t offset, size_t size, uint64_t& out);

template <typename T>
bool load(std::span<const uint8_t> bytes, size_t offset, T& out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, bytes.data() + offset, sizeof(T));
  return true;
}

}  // namespace gdrproxy::proxy
