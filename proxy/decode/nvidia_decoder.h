// Decoding of NVIDIA device ioctls: the frontend escapes on /dev/nvidiactl and /dev/nvidiaN
// (RM_ALLOC with its class, RM_CONTROL with its command, ...) and the UVM ioctls on
// /dev/nvidia-uvm. Numbers and names come from proxy/abi/nvidia_abi.h only.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "proxy/abi/nvidia_abi.h"
#include "proxy/decode/decoded_call.h"
#include "proxy/mem/memory_reader.h"

namespace gdrproxy::proxy {

// `arg` is the ioctl's third argument (a pointer in the caller); `abi` is the table set of the
// host's driver version.
// At DecodeDepth::kPolicy only the name, policy keys, result regions and `malformed` are filled.
DecodedCall decode_nvidia_frontend_ioctl(uint32_t cmd, uint64_t arg, const MemoryReader& mem,
                                         const NvidiaDriverAbi& abi,
                                         DecodeDepth depth = DecodeDepth::kFull);
DecodedCall decode_nvidia_uvm_ioctl(uint32_t cmd, uint64_t arg, const MemoryReader& mem,
                                    const NvidiaDriverAbi& abi,
                                    DecodeDepth depth = DecodeDepth::kFull);
// The same two into `c` (cleared first, its storage kept: the engine's per-call path).
void decode_nvidia_frontend_ioctl(DecodedCall& c, uint32_t cmd, uint64_t arg,
                                  const MemoryReader& mem, const NvidiaDriverAbi& abi,
                                  DecodeDepth depth);
void decode_nvidia_uvm_ioctl(DecodedCall& c, uint32_t cmd, uint64_t arg, const MemoryReader& mem,
                             const NvidiaDriverAbi& abi, DecodeDepth depth);

// Whether frontend escape `nr` (at its own size) decodes to the same name and policy keys
// whatever its parameters hold: known, fixed-size, decoded field by field, and naming no class
// (RM_ALLOC, RM_CONTROL, CARD_INFO, ATTACH_GPUS_TO_FD, IOCTL_XFER_CMD, EXPORT_TO_DMABUF_FD and
// escapes with a class field do not qualify). The policy's verdict on it then depends on the
// request alone (proxy/sandbox/kernel_allow.h).
bool nv_escape_keys_from_request(const NvidiaDriverAbi& abi, uint8_t nr);

// Renders the result of a returned call from the bytes of its result regions (copied at
// syscall exit): e.g. the RM status of RM_ALLOC/RM_CONTROL, rmStatus of UVM calls, the fd of
// EXPORT_TO_DMABUF_FD.
void decode_nvidia_result(const DecodedCall& call, std::span<const uint8_t> region0,
                          std::span<const uint8_t> region1, std::vector<DecodedField>& out);

// What an RM_CONTROL or RM_ALLOC call names, for refusal lines, from the driver's generated
// tables: "cmd=NAME(0x...) [RmClass, params N bytes, flags A|B]", or for a number the release
// does not export "cmd=unknown(0x...) [class NV20_SUBDEVICE_0, not exported by driver V]".
// Empty for any other call.
std::string nvidia_call_subject(const DecodedCall& call, const NvidiaDriverAbi& abi);

}  // namespace gdrproxy::proxy
