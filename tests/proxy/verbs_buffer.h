// Builds RDMA_VERBS_IOCTL buffers byte-exact from the uapi structs and maps them into a
// BufferMemory, as a caller's memory would hold them.
#pragma once

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include <cstring>
#include <vector>

#include "proxy/mem/memory_reader.h"

namespace gdrproxy::proxy::testing {

inline constexpr uint64_t kHdrAddr = 0x10000;
inline constexpr uint64_t kDataAddr = 0x20000;

struct VerbsBuffer {
  uint16_t object = 0, method = 0;
  std::vector<ib_uverbs_attr> attrs;
  uint32_t driver_id = 0;  // the header's driver_id: the caller's word
  int length_fix = 0;
  int num_attrs_fix = 0;

  VerbsBuffer& attr(uint16_t id, uint16_t len, uint64_t data) {
    ib_uverbs_attr a{};
    a.attr_id = id;
    a.len = len;
    a.data = data;
    attrs.push_back(a);
    return *this;
  }
  std::vector<uint8_t> bytes() const {
    ib_uverbs_ioctl_hdr h{};
    h.object_id = object;
    h.method_id = method;
    h.driver_id = driver_id;
    h.num_attrs = static_cast<uint16_t>(attrs.size() + num_attrs_fix);
    h.length = static_cast<uint16_t>(sizeof h + attrs.size() * sizeof(ib_uverbs_attr) + length_fix);
    std::vector<uint8_t> b(sizeof h + attrs.size() * sizeof(ib_uverbs_attr));
    std::memcpy(b.data(), &h, sizeof h);
    if (!attrs.empty())
      std::memcpy(b.data() + sizeof h, attrs.data(), attrs.size() * sizeof(ib_uverbs_attr));
    return b;
  }
  void map_into(BufferMemory& mem) const { mem.map(kHdrAddr, bytes()); }
};

template <typename T>
std::vector<uint8_t> bytes_of(const T& v) {
  std::vector<uint8_t> b(sizeof v);
  std::memcpy(b.data(), &v, sizeof v);
  return b;
}

}  // namespace gdrproxy::proxy::testing
