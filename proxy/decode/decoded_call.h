// The decoder's output: one device call, named and with its arguments rendered, plus the keys
// the policy matches on and the memory to capture when the call returns (for its result).
// Decoders fill it; policy, tracer and result observer only read it. A decoder never throws on
// bad input: it records what was wrong in `malformed` and the policy fails closed on that.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "proxy/abi/device_class.h"
#include "proxy/abi/nvidia_access.h"  // NvRequires

namespace gdrproxy::proxy {

struct NvidiaDriverAbi;  // proxy/abi/nvidia_abi.h

struct DecodedField {
  std::string name;
  std::string value;
};

// What the policy can match on. Unset fields did not apply or could not be decoded.
struct PolicyKeys {
  std::optional<uint16_t> uverbs_object;
  std::optional<uint16_t> uverbs_method;
  std::optional<uint32_t> uverbs_write_cmd;    // legacy command tunnelled by INVOKE_WRITE
  std::optional<uint32_t> uverbs_provider;     // rdma_driver_id of the fd's device, when known
  std::optional<uint8_t> nv_escape;            // IOC_NR of an NVIDIA frontend ioctl
  std::optional<uint32_t> nv_class;            // RM_ALLOC hClass
  std::optional<uint32_t> nv_device_instance;  // deviceId of an RM_ALLOC(NV01_DEVICE_0)
  std::optional<uint32_t> nv_control;          // RM_CONTROL cmd
  // Who the running driver lets make this RM_CONTROL or RM_ALLOC (its own generated tables;
  // unset when the driver has none of its own).
  std::optional<NvRequires> nv_needs;
  // The session's NVIDIA tables name this escape or UVM ioctl (the policy's known/unknown).
  bool nv_named = false;
  std::optional<uint32_t> uvm_cmd;      // raw UVM command number
  std::optional<uint32_t> rdma_cm_cmd;  // RDMA_USER_CM_CMD_* of an observed rdma_cm write
  // The dma-buf fds a call hands the device (REG_DMABUF_MR's, REG_MR's, a CQ's or QP's buffer):
  // the policy checks their provenance. A call naming more than two is malformed.
  std::optional<int32_t> dmabuf_fd;
  std::optional<int32_t> dmabuf_fd2;
  // A uverbs attribute the policy cannot judge: a core-namespace id the method's table does not
  // name, or capability fds (UCAP). The call is then unknown.
  std::optional<uint16_t> uverbs_unjudged_attr;
};

// A range of the caller's memory copied when the syscall returns: the result (new handles,
// RM status, response structs) is written there by the kernel.
struct ResultRegion {
  uint64_t addr = 0;
  uint32_t len = 0;
};

// How much of a call to render. kPolicy fills only what the policy matches on (name, keys,
// malformed): the enforce fast path. kFull also renders every argument for the trace.
enum class DecodeDepth { kPolicy, kFull };

struct DecodedCall {
  DeviceClass device_class = DeviceClass::kUnknown;
  uint32_t cmd = 0;                // ioctl request as the kernel sees it (low 32 bits)
  std::string name;                // e.g. "MR.REG_DMABUF_MR", "INVOKE_WRITE(REG_MR)", "RM_ALLOC"
  std::vector<DecodedField> args;  // rendered arguments, in ABI order
  std::string malformed;           // non-empty: why the input could not be decoded
  PolicyKeys keys;
  std::array<ResultRegion, 2> result_regions{};
  // Opaque decoder context that result decoding needs (e.g. attribute offsets).
  std::vector<uint32_t> result_hints;
  // The NVIDIA release whose tables decoded the call: its result is read at that release's
  // offsets. Null for other classes.
  const NvidiaDriverAbi* nvidia_abi = nullptr;
  // False when decoding at DecodeDepth::kPolicy: decoders skip rendering `args`.
  bool render = true;

  // Back to a default-constructed call, keeping the strings' and vectors' storage: a decoder
  // that fills a call kept from one ioctl to the next allocates nothing once it is warm.
  void clear();
};

}  // namespace gdrproxy::proxy
