// libFuzzer target: arbitrary bytes as the caller's memory behind an RDMA_VERBS_IOCTL and behind a
// legacy write() on a uverbs fd (decode_uverbs_write), decoded (on a device of no known provider
// and of each provider with a driver namespace), judged by the built-in policy and rendered. Any
// crash, hang or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "proxy/abi/uverbs_abi.h"
#include "proxy/abi/uverbs_providers.h"
#include "proxy/decode/uverbs_decoder.h"
#include "proxy/policy/policy.h"
#include "proxy/trace/trace_record.h"

using namespace gdrproxy::proxy;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Policy policy = Policy::builtin_default();
  std::vector<uint8_t> bytes(data, data + size);
  BufferMemory mem;
  // The same bytes at the header address and at the addresses attribute pointers tend to use.
  mem.map(0x10000, bytes);
  mem.map(0x20000, bytes);
  // The first byte picks the device's provider: none, or one whose tables have driver methods.
  uint32_t provider = uverbs::kProviderUnknown;
  if (size > 0 && data[0] % 2) {
    std::vector<uint32_t> with_methods;
    for (const auto& p : uverbs::all_providers())
      if (!p.methods.empty()) with_methods.push_back(p.driver_id);
    provider = with_methods[data[0] / 2 % with_methods.size()];
  }
  for (uint32_t cmd : {uverbs::kVerbsIoctl, 0xc0101b02u}) {
    DecodedCall call = decode_uverbs_ioctl(cmd, 0x10000, mem, DecodeDepth::kFull, provider);
    std::vector<DecodedField> out;
    decode_uverbs_result(call, bytes, bytes, out);
    policy.evaluate(call);
    TraceRecord r;
    r.call = call;
    r.out = out;
    format_text(r);
    format_json(r);
  }
  // The same bytes as a write() buffer: whole, and cut short (count smaller than the struct).
  for (uint64_t count : {uint64_t{size}, uint64_t{size / 2}, uint64_t{size} + 64}) {
    TraceRecord r;
    r.call = decode_uverbs_write(0x10000, count, mem);
    policy.evaluate(r.call);
    format_text(r);
    format_json(r);
  }
  return 0;
}
