// libFuzzer target for the NVIDIA decoders. The input is split into a request number, a choice of
// driver tables and the caller's memory, which is mapped at two fixed addresses (the ioctl
// argument, and a second place that IOCTL_XFER_CMD may point to); both decoders run on it and
// the result decoder runs on the same bytes as if the kernel had written them back. Any crash,
// hang or sanitizer report is a finding: the decoders must treat every byte as hostile.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "proxy/decode/nvidia_decoder.h"

namespace {

constexpr uint64_t kArg = 0x7f0000001000;
constexpr uint64_t kSecond = 0x7f0000100000;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gdrproxy::proxy;
  if (size < 5) return 0;
  uint32_t cmd;
  std::memcpy(&cmd, data, 4);
  const uint8_t selector = data[4];
  data += 5;
  size -= 5;

  const auto abis = nvidia_known_abis();
  const NvidiaDriverAbi& abi = *abis[(selector & 0x80 ? abis.size() - 1 : selector) % abis.size()];
  std::vector<uint8_t> bytes(data, data + size);
  BufferMemory mem;
  mem.map(kArg, bytes);
  // Half of the input again at the second address, so that tunnelled parameters can resolve.
  mem.map(kSecond, std::vector<uint8_t>(data + size / 2, data + size));

  // Frontend: as given, and with the escape number forced into the table's range so that the
  // interesting decoders are reached often.
  for (uint32_t c :
       {cmd, (cmd & 0xffffff00u) | (selector & 0x40 ? 0x20 + (cmd & 0x3f) : 200 + (cmd % 19))}) {
    const DecodedCall call =
        decode_nvidia_frontend_ioctl(c, selector & 1 ? kArg : kSecond, mem, abi);
    std::vector<DecodedField> out;
    decode_nvidia_result(call, bytes, {}, out);
    decode_nvidia_result(call, std::span(bytes).first(size / 2), bytes, out);
  }
  // UVM: the raw number, and one folded into the range of real commands.
  for (uint32_t c : {cmd, cmd % 82, 0x30000001u + (cmd & 1)}) {
    const DecodedCall call = decode_nvidia_uvm_ioctl(c, kArg, mem, abi);
    std::vector<DecodedField> out;
    decode_nvidia_result(call, bytes, {}, out);
  }
  return 0;
}
