// The uverbs ioctl ABI as data: objects, methods, and each method's attributes with a declared
// kind, plus the legacy write() commands that INVOKE_WRITE tunnels and the fields of their
// request/response structs. Numbers come from rdma-core's uapi headers
// (rdma/ib_user_ioctl_cmds.h, rdma/ib_user_verbs.h); the providers' driver namespaces are in
// proxy/abi/uverbs_providers.h. This file only adds names and kinds. The declared kind, never a
// guess from memory contents, decides how an attribute's 64-bit data word is read: inline value,
// pointer, handle or fd.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gdrproxy::proxy::uverbs {

// RDMA_VERBS_IOCTL: _IOWR(0x1b, 1, struct ib_uverbs_ioctl_hdr).
inline constexpr uint8_t kIoctlType = 0x1b;
inline constexpr uint32_t kVerbsIoctl = 0xc0181b01;
inline constexpr uint32_t kHeaderSize = 24;  // sizeof(struct ib_uverbs_ioctl_hdr)
inline constexpr uint32_t kAttrSize = 16;    // sizeof(struct ib_uverbs_attr)
// The kernel refuses more attributes than fit a page-sized header; so do we.
inline constexpr uint32_t kMaxAttrs = (4096 - kHeaderSize) / kAttrSize;
// Object and method ids at or above this carry a driver (provider) namespace.
inline constexpr uint16_t kDriverNamespace = 0x1000;

enum class AttrKind : uint8_t {
  kIdrIn,       // data = handle of an existing object
  kIdrNew,      // kernel writes the new object's handle into data
  kIdrDestroy,  // data = handle of the object destroyed
  kFdIn,        // data = fd of an existing object (e.g. a completion channel)
  kFdNew,       // kernel writes a new fd into data
  kRawFd,       // data = an fd of another subsystem (e.g. a dma-buf)
  kU8In,
  kU16In,
  kU32In,
  kU64In,
  kS32In,
  kEnumIn,       // attr_data.enum_data.elem_id selects the variant
  kAccessFlags,  // u32 IB_ACCESS_* flags
  kWriteCmd,     // u32 legacy command number (INVOKE_WRITE)
  kPtrIn,        // opaque input buffer
  kPtrOut,       // output buffer written by the kernel
  kU32Out,       // output u32 written through the pointer in data
  kU64Out,
  kOpaque,  // a provider's attribute: named, its data word shown as it is, never interpreted
  // data points to a struct ib_uverbs_buffer_desc; a dma-buf one names an fd the policy checks
  kBufferDesc,
  // data points to an array of fds that grant the context capabilities (UCAP fds): the policy
  // cannot judge them, so a call carrying one is unknown (a rule may allow it)
  kFdArray,
};

struct AttrSpec {
  uint16_t id;
  const char* name;
  AttrKind kind;
};

struct MethodSpec {
  uint16_t object;
  uint16_t method;
  const char* name;  // method name, e.g. "REG_DMABUF_MR"
  std::span<const AttrSpec> attrs;
  // A provider's method (proxy/abi/uverbs_providers.h): whether rdma-core's provider library
  // issues it. The default policy treats one it never issues as unknown.
  bool issued_by_library = true;
};

struct ObjectSpec {
  uint16_t id;
  const char* name;  // e.g. "MR", "MLX5_DEVX_OBJ"
};

// One field of a legacy command struct.
enum class FieldFormat : uint8_t { kDec, kHex, kHandle, kFd, kAccess, kQpState, kQpAttrMask };
struct WriteField {
  const char* name;
  uint16_t offset;
  uint8_t size;  // 1, 2, 4 or 8
  FieldFormat format;
};

struct WriteCmdSpec {
  uint32_t cmd;      // IB_USER_VERBS_CMD_* (extended ones with IB_USER_VERBS_CMD_FLAG_EXTENDED)
  const char* name;  // e.g. "REG_MR", "EX_CREATE_QP"
  std::span<const WriteField> in;
  std::span<const WriteField> out;
};

// The core (common) namespace only; a provider's ids are found through uverbs_providers.h.
const ObjectSpec* find_object(uint16_t id);
const ObjectSpec* find_object(std::string_view name);
const MethodSpec* find_method(uint16_t object, uint16_t method);
const MethodSpec* find_method(uint16_t object, std::string_view name);
const WriteCmdSpec* find_write_cmd(uint32_t cmd);
const WriteCmdSpec* find_write_cmd(std::string_view name);
// Common attributes every method may carry (driver UHW in/out).
const AttrSpec* find_common_attr(uint16_t id);

std::span<const ObjectSpec> all_objects();
std::span<const MethodSpec> all_methods();
std::span<const WriteCmdSpec> all_write_cmds();

// Renders IB_ACCESS_* flags ("LOCAL_WRITE|REMOTE_READ") and IB QP states ("RTS").
std::string render_access_flags(uint64_t flags);
const char* qp_state_name(uint64_t state);
std::string render_qp_attr_mask(uint64_t mask);

}  // namespace gdrproxy::proxy::uverbs
