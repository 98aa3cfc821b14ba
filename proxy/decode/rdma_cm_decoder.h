// Decoding of rdma_cm commands written to /dev/infiniband/rdma_cm (see abi/rdma_cm_abi.h).
#pragma once

#include <cstdint>

#include "proxy/decode/decoded_call.h"
#include "proxy/mem/memory_reader.h"

namespace gdrproxy::proxy {

// `buf`/`count` are write()'s second and third arguments.
DecodedCall decode_rdma_cm_write(uint64_t buf, uint64_t count, const MemoryReader& mem);

}  // namespace gdrproxy::proxy
