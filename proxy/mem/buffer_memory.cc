#include <cstring>

#include "proxy/mem/memory_reader.h"

namespace gdrproxy::proxy {

bool BufferMemory::read(uint64_t addr, std::span<uint8_t> out) const {
  auto it = ranges_.upper_bound(addr);
  if (it == ranges_.begin()) return false;
  --it;
  const uint64_t offset = addr - it->first;
  const auto& bytes = it->second;
  if (offset > bytes.size() || out.size() > bytes.size() - offset) return false;
  if (!out.empty()) std::memcpy(out.data(), bytes.data() + offset, out.size());
  return true;
}

}  // namespace gdrproxy::proxy
