// Decoding of uverbs ioctls (RDMA_VERBS_IOCTL): the header, each attribute by its declared kind,
// and the legacy command an INVOKE_WRITE tunnels. Bad input (short reads, lengths that disagree,
// absurd attribute counts) is reported in DecodedCall::malformed, never thrown.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "proxy/decode/decoded_call.h"
#include "proxy/mem/memory_reader.h"

namespace gdrproxy::proxy {

// `provider` is the kernel's rdma_driver_id of the device the fd is on (0: not known): a
// driver-namespace object, method or attribute is named from that provider's table only, and
// stays a number when the provider is not known.
DecodedCall decode_uverbs_ioctl(uint32_t cmd, uint64_t arg, const MemoryReader& mem,
                                DecodeDepth depth = DecodeDepth::kFull, uint32_t provider = 0);
// The same into `call` (cleared first, its storage kept: the engine's per-call path).
void decode_uverbs_ioctl(DecodedCall& call, uint32_t cmd, uint64_t arg, const MemoryReader& mem,
                         DecodeDepth depth, uint32_t provider = 0);

// A legacy command written with write() on a uverbs fd (struct ib_uverbs_cmd_hdr, then for
// extended commands struct ib_uverbs_ex_cmd_hdr, then the command's struct): the same verb as an
// INVOKE_WRITE of that command, named "WRITE(REG_MR)" and keyed by uverbs_write_cmd.
DecodedCall decode_uverbs_write(uint64_t buf, uint64_t count, const MemoryReader& mem);

// Renders what the kernel wrote back: new handles and fds in the attribute array (region0 holds
// the header and attributes after the call) and the response of an INVOKE_WRITE or the first
// scalar output attribute (region1).
void decode_uverbs_result(const DecodedCall& call, std::span<const uint8_t> region0,
                          std::span<const uint8_t> region1, std::vector<DecodedField>& out);

}  // namespace gdrproxy::proxy
