// RDMA_VERBS_IOCTL decoding. The header says how many 16-byte attributes follow; each attribute's
// 64-bit `data` is an inline value, a pointer, a handle or an fd depending on its declared kind
// in proxy/abi/uverbs_abi.cc. Scalars of at most 8 bytes are inline (the kernel's rule), larger
// ones are pointers; we never guess from the memory contents.
#include "proxy/decode/uverbs_decoder.h"

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include <array>
#include <cstring>
#include <span>

#include "base/hex.h"
#include "base/hot_path.h"
#include "proxy/abi/uverbs_abi.h"
#include "proxy/abi/uverbs_providers.h"
#include "proxy/abi/uverbs_uapi_newer.h"
#include "proxy/decode/format.h"

namespace gdrproxy::proxy {
namespace {

using uverbs::AttrKind;

static_assert(sizeof(ib_uverbs_ioctl_hdr) == uverbs::kHeaderSize);
static_assert(sizeof(ib_uverbs_attr) == uverbs::kAttrSize);
static_assert(RDMA_VERBS_IOCTL == uverbs::kVerbsIoctl);

// Largest buffer we copy to render one scalar or struct; longer buffers are shown as pointers.
constexpr uint32_t kMaxInlineCopy = 256;
// How much of a response struct is captured at syscall exit.
constexpr uint32_t kMaxResultCopy = 256;

// Names are built on every call, the enforce path's included: appended into one string whose
// capacity is reserved once, never concatenated from temporaries.
constexpr size_t kNameCapacity = 64;

GDRPROXY_HOT void append_object_name(std::string& s, uint32_t provider, uint16_t id) {
  if (const auto* o = uverbs::find_object(provider, id)) {
    s += o->name;
    return;
  }
  s += id >= uverbs::kDriverNamespace ? "DRIVER_OBJ_" : "OBJ_";
  s += hex(id);
}

GDRPROXY_HOT void append_method_name(std::string& s, const uverbs::MethodSpec* m, uint16_t method) {
  if (m) {
    s += m->name;
    return;
  }
  s += method >= uverbs::kDriverNamespace ? "DRIVER_METHOD_" : "METHOD_";
  s += hex(method);
}

// "<prefix>(<command name>)", e.g. INVOKE_WRITE(REG_MR), in `s`'s existing capacity.
GDRPROXY_HOT void set_write_name(std::string& s, const char* prefix,
                                 const uverbs::WriteCmdSpec* spec, uint64_t cmd) {
  s.clear();
  s.reserve(kNameCapacity);
  s += prefix;
  s += '(';
  if (spec) {
    s += spec->name;
  } else {
    s += "CMD_";
    s += hex(cmd);
  }
  s += ')';
}

// Reads an attribute's scalar value: inline when len <= 8, else through the pointer.
GDRPROXY_HOT bool read_scalar(const ib_uverbs_attr& a, const MemoryReader& mem, uint64_t& out) {
  if (a.len <= 8) {
    out = a.data;
    if (a.len < 8 && a.len > 0) out &= (1ull << (8 * a.len)) - 1;
    return true;
  }
  uint8_t buf[8];
  if (!mem.read(a.data, buf)) return false;
  std::memcpy(&out, buf, 8);
  return true;
}

std::string render_field(uint64_t v, uverbs::FieldFormat f) {
  using FF = uverbs::FieldFormat;
  switch (f) {
    case FF::kDec:
      return dec(static_cast<int64_t>(v));
    case FF::kHex:
      return hex(v);
    case FF::kHandle:
      return dec(static_cast<int64_t>(v));
    case FF::kFd:
      return dec(static_cast<int32_t>(v));
    case FF::kAccess:
      return uverbs::render_access_flags(v);
    case FF::kQpState:
      return uverbs::qp_state_name(v);
    case FF::kQpAttrMask:
      return uverbs::render_qp_attr_mask(v);
  }
  return hex(v);
}

void render_fields(std::span<const uverbs::WriteField> fields, std::span<const uint8_t> bytes,
                   std::vector<DecodedField>& out) {
  for (const auto& f : fields) {
    uint64_t v;
    if (!load_le(bytes, f.offset, f.size, v)) {
      out.push_back({f.name, "<short>"});
      continue;
    }
    out.push_back({f.name, render_field(v, f.format)});
  }
}

// The legacy command inside an INVOKE_WRITE: its number, name and core_in fields.
GDRPROXY_HOT void decode_invoke_write(std::span<const ib_uverbs_attr> attrs,
                                      const MemoryReader& mem, DecodedCall& call,
                                      DecodeDepth depth) {
  const ib_uverbs_attr* core_in = nullptr;
  const ib_uverbs_attr* core_out = nullptr;
  const ib_uverbs_attr* write_cmd = nullptr;
  for (const auto& a : attrs) {
    if (a.attr_id == UVERBS_ATTR_CORE_IN) core_in = &a;
    if (a.attr_id == UVERBS_ATTR_CORE_OUT) core_out = &a;
    if (a.attr_id == UVERBS_ATTR_WRITE_CMD) write_cmd = &a;
  }
  if (!write_cmd) {
    call.malformed = "INVOKE_WRITE without a WRITE_CMD attribute";
    return;
  }
  uint64_t cmd = 0;
  read_scalar(*write_cmd, mem, cmd);
  call.keys.uverbs_write_cmd = static_cast<uint32_t>(cmd);
  const auto* spec = uverbs::find_write_cmd(static_cast<uint32_t>(cmd));
  set_write_name(call.name, "INVOKE_WRITE", spec, cmd);
  // Replace the generic attribute rendering with the command's own fields.
  call.args.clear();
  if (core_in && spec && !spec->in.empty() && depth == DecodeDepth::kFull) {
    std::vector<uint8_t> in(std::min<uint32_t>(core_in->len, kMaxInlineCopy));
    bool ok = core_in->len <= 8 ? (std::memcpy(in.data(), &core_in->data, in.size()), true)
                                : mem.read(core_in->data, in);
    if (ok) {
      render_fields(spec->in, in, call.args);
    } else {
      call.malformed = "INVOKE_WRITE core_in unreadable at " + hex(core_in->data);
    }
  }
  if (core_out && core_out->len > 0) {
    call.result_regions[1] = {core_out->data, std::min<uint32_t>(core_out->len, kMaxResultCopy)};
  }
}

}  // namespace

DecodedCall decode_uverbs_write(uint64_t buf, uint64_t count, const MemoryReader& mem) {
  DecodedCall call;
  call.device_class = DeviceClass::kUverbs;
  call.name = "WRITE";
  ib_uverbs_cmd_hdr hdr{};
  if (count < sizeof hdr) {
    call.malformed = "write of " + dec(static_cast<int64_t>(count)) +
                     " bytes is shorter than the command header";
    return call;
  }
  if (!mem.read(buf, {reinterpret_cast<uint8_t*>(&hdr), sizeof hdr})) {
    call.malformed = "command header unreadable at " + hex(buf);
    return call;
  }
  const bool extended = (hdr.command & IB_USER_VERBS_CMD_FLAG_EXTENDED) != 0;
  const uint32_t cmd = (hdr.command & IB_USER_VERBS_CMD_COMMAND_MASK) |
                       (extended ? IB_USER_VERBS_CMD_FLAG_EXTENDED : 0);
  call.keys.uverbs_write_cmd = cmd;
  const auto* spec = uverbs::find_write_cmd(cmd);
  set_write_name(call.name, "WRITE", spec, cmd);
  const uint64_t at = buf + sizeof hdr + (extended ? sizeof(ib_uverbs_ex_cmd_hdr) : 0);
  const uint64_t end = buf + count;
  if (at > end) {
    call.malformed = "extended command shorter than its header";
    return call;
  }
  if (spec && !spec->in.empty()) {
    std::vector<uint8_t> in(std::min<uint64_t>(end - at, kMaxInlineCopy));
    if (mem.read(at, in))
      render_fields(spec->in, in, call.args);
    else
      call.malformed = "command unreadable at " + hex(at);
  }
  return call;
}

DecodedCall decode_uverbs_ioctl(uint32_t cmd, uint64_t arg, const MemoryReader& mem,
                                DecodeDepth depth, uint32_t provider) {
  DecodedCall call;
  decode_uverbs_ioctl(call, cmd, arg, mem, depth, provider);
  return call;
}

// Records a dma-buf fd the call hands the device; false (the call malformed) past two.
static bool add_dmabuf_fd(DecodedCall& call, int32_t fd) {
  auto& k = call.keys;
  if (!k.dmabuf_fd || *k.dmabuf_fd == fd) {
    k.dmabuf_fd = fd;
  } else if (!k.dmabuf_fd2 || *k.dmabuf_fd2 == fd) {
    k.dmabuf_fd2 = fd;
  } else {
    call.malformed = "more than two dma-buf fds in one call";
    return false;
  }
  return true;
}

GDRPROXY_HOT void decode_uverbs_ioctl(DecodedCall& call, uint32_t cmd, uint64_t arg,
                                      const MemoryReader& mem, DecodeDepth depth,
                                      uint32_t provider) {
  call.clear();
  call.device_class = DeviceClass::kUverbs;
  call.cmd = cmd;
  if (provider != uverbs::kProviderUnknown) call.keys.uverbs_provider = provider;
  if (cmd != uverbs::kVerbsIoctl) {
    call.name = "UVERBS_IOCTL_" + hex(cmd);
    return;
  }
  // One read of the header; the attributes that follow it come from the same read where they lie
  // in the same page (ProcessMemory reads ahead to the end of the page).
  ib_uverbs_ioctl_hdr hdr;
  if (!mem.read(arg, {reinterpret_cast<uint8_t*>(&hdr), sizeof hdr})) {
    call.name = "RDMA_VERBS_IOCTL";
    call.malformed = "header unreadable at " + hex(arg);
    return;
  }
  call.keys.uverbs_object = hdr.object_id;
  call.keys.uverbs_method = hdr.method_id;
  const auto* method = uverbs::find_method(provider, hdr.object_id, hdr.method_id);
  call.name.reserve(kNameCapacity);
  append_object_name(call.name, provider, hdr.object_id);
  call.name += '.';
  append_method_name(call.name, method, hdr.method_id);
  if (hdr.num_attrs > uverbs::kMaxAttrs) {
    call.malformed = "absurd attribute count " + dec(hdr.num_attrs);
    return;
  }
  const uint32_t expect = uverbs::kHeaderSize + uverbs::kAttrSize * hdr.num_attrs;
  if (hdr.length != expect) {
    call.malformed = "header length " + dec(hdr.length) + " disagrees with " + dec(hdr.num_attrs) +
                     " attributes (" + dec(expect) + ")";
    return;
  }
  // On the stack (at most a page of them): no allocation per call.
  std::array<ib_uverbs_attr, uverbs::kMaxAttrs> attr_buf;
  const std::span<ib_uverbs_attr> attrs(attr_buf.data(), hdr.num_attrs);
  if (!attrs.empty() &&
      !mem.read(arg + uverbs::kHeaderSize, {reinterpret_cast<uint8_t*>(attrs.data()),
                                            attrs.size() * sizeof(ib_uverbs_attr)})) {
    call.malformed = "attributes unreadable at " + hex(arg + uverbs::kHeaderSize);
    return;
  }
  // The attribute array is where the kernel writes new handles and fds.
  call.result_regions[0] = {arg, expect};

  bool first_scalar_out = true;
  // Arguments are rendered for a trace only: the policy matches on the keys.
  const bool render = depth == DecodeDepth::kFull;
  for (const auto& a : attrs) {
    const uverbs::AttrSpec* spec = nullptr;
    if (method) {
      for (const auto& s : method->attrs)
        if (s.id == a.attr_id) spec = &s;
    }
    if (!spec) spec = uverbs::find_driver_attr(provider, hdr.object_id, hdr.method_id, a.attr_id);
    if (!spec) spec = uverbs::find_common_attr(a.attr_id);
    // A core attribute the method's table does not name could carry anything (a newer kernel's
    // dma-buf fd, say): the call is unknown, not judged by the attributes that are named.
    if (!spec && method && (a.attr_id & UVERBS_ID_NS_MASK) == 0 && !call.keys.uverbs_unjudged_attr)
      call.keys.uverbs_unjudged_attr = a.attr_id;
    if (!spec || spec->kind == AttrKind::kOpaque) {
      // Unnamed, or a provider's attribute whose layout is not declared: shown as it is.
      if (render)
        call.args.push_back({spec ? std::string(spec->name) : "attr_" + hex(a.attr_id),
                             "len=" + dec(a.len) + " data=" + hex(a.data)});
      continue;
    }
    uint64_t v = 0;
    switch (spec->kind) {
      case AttrKind::kIdrIn:
      case AttrKind::kIdrDestroy:
        if (render) call.args.push_back({spec->name, dec(static_cast<uint32_t>(a.data))});
        break;
      case AttrKind::kFdIn:
        if (render) call.args.push_back({spec->name, dec(static_cast<int32_t>(a.data))});
        break;
      case AttrKind::kRawFd:
        // The raw fds in the tables are dma-bufs (REG_DMABUF_MR's, mlx5's DEVX_UMEM_REG's): the
        // policy checks their provenance.
        if (!add_dmabuf_fd(call, static_cast<int32_t>(a.data))) return;
        if (render) call.args.push_back({spec->name, dec(static_cast<int32_t>(a.data))});
        break;
      case AttrKind::kBufferDesc: {
        namespace nw = uverbs::newer;
        uint8_t desc[nw::kBufferDescSize];
        if (a.len != sizeof desc || !mem.read(a.data, desc)) {
          call.malformed = std::string("attribute ") + spec->name + " (" + dec(a.len) +
                           " bytes at " + hex(a.data) + ") is not a readable buffer descriptor";
          return;
        }
        uint32_t type = 0;
        int32_t fd = -1;
        std::memcpy(&type, desc, sizeof type);
        std::memcpy(&fd, desc + nw::kBufferDescFdOffset, sizeof fd);
        if (type == nw::kBufferTypeDmabuf && !add_dmabuf_fd(call, fd)) return;
        if (render)
          call.args.push_back({spec->name, type == nw::kBufferTypeDmabuf ? "dmabuf fd " + dec(fd)
                                                                         : "type " + dec(type)});
        break;
      }
      case AttrKind::kFdArray:
        if (!call.keys.uverbs_unjudged_attr) call.keys.uverbs_unjudged_attr = a.attr_id;
        if (render) call.args.push_back({spec->name, "[" + dec(a.len / 4) + " fds]"});
        break;
      case AttrKind::kIdrNew:
      case AttrKind::kFdNew:
        break;  // shown with the result
      case AttrKind::kEnumIn:
        if (render) call.args.push_back({spec->name, "elem " + dec(a.attr_data.enum_data.elem_id)});
        break;
      case AttrKind::kU8In:
      case AttrKind::kU16In:
      case AttrKind::kU32In:
      case AttrKind::kU64In:
      case AttrKind::kWriteCmd:
        if (!read_scalar(a, mem, v)) {
          call.malformed = std::string("attribute ") + spec->name + " unreadable at " + hex(a.data);
          return;
        }
        if (render) call.args.push_back({spec->name, dec(static_cast<int64_t>(v))});
        break;
      case AttrKind::kS32In:
        if (!read_scalar(a, mem, v)) {
          call.malformed = std::string("attribute ") + spec->name + " unreadable at " + hex(a.data);
          return;
        }
        if (render) call.args.push_back({spec->name, dec(static_cast<int32_t>(v))});
        break;
      case AttrKind::kAccessFlags:
        if (!read_scalar(a, mem, v)) {
          call.malformed = std::string("attribute ") + spec->name + " unreadable at " + hex(a.data);
          return;
        }
        if (render) call.args.push_back({spec->name, uverbs::render_access_flags(v)});
        break;
      case AttrKind::kPtrIn:
        if (render) call.args.push_back({spec->name, "[" + dec(a.len) + " bytes]"});
        break;
      case AttrKind::kPtrOut:
      case AttrKind::kOpaque:
        break;
      case AttrKind::kU32Out:
      case AttrKind::kU64Out:
        if (first_scalar_out && a.len > 0) {
          call.result_regions[1] = {a.data, std::min<uint32_t>(a.len, 8)};
          call.result_hints = {a.attr_id};
          first_scalar_out = false;
        }
        break;
    }
  }
  if (hdr.object_id == UVERBS_OBJECT_DEVICE && hdr.method_id == UVERBS_METHOD_INVOKE_WRITE) {
    call.result_hints.clear();
    decode_invoke_write(attrs, mem, call, depth);
  }
}

void decode_uverbs_result(const DecodedCall& call, std::span<const uint8_t> region0,
                          std::span<const uint8_t> region1, std::vector<DecodedField>& out) {
  if (call.cmd != uverbs::kVerbsIoctl || !call.keys.uverbs_object || !call.keys.uverbs_method)
    return;
  const auto* method =
      uverbs::find_method(call.keys.uverbs_provider.value_or(uverbs::kProviderUnknown),
                          *call.keys.uverbs_object, *call.keys.uverbs_method);
  ib_uverbs_ioctl_hdr hdr;
  if (!load(region0, 0, hdr)) return;
  const uint32_t n = std::min<uint32_t>(hdr.num_attrs, uverbs::kMaxAttrs);
  for (uint32_t i = 0; i < n && method; ++i) {
    ib_uverbs_attr a;
    if (!load(region0, uverbs::kHeaderSize + i * uverbs::kAttrSize, a)) break;
    for (const auto& s : method->attrs) {
      if (s.id != a.attr_id) continue;
      if (s.kind == AttrKind::kIdrNew) out.push_back({s.name, dec(static_cast<uint32_t>(a.data))});
      if (s.kind == AttrKind::kFdNew) out.push_back({s.name, dec(static_cast<int32_t>(a.data))});
    }
  }
  if (call.keys.uverbs_write_cmd) {
    if (const auto* spec = uverbs::find_write_cmd(*call.keys.uverbs_write_cmd))
      if (!region1.empty()) render_fields(spec->out, region1, out);
    return;
  }
  if (method && !call.result_hints.empty() && !region1.empty()) {
    for (const auto& s : method->attrs) {
      if (s.id != call.result_hints[0]) continue;
      uint64_t v;
      if (load_le(region1, 0, std::min<size_t>(region1.size(), s.kind == AttrKind::kU32Out ? 4 : 8),
                  v))
        out.push_back({s.name, dec(static_cast<int64_t>(v))});
    }
  }
}

}  // namespace gdrproxy::proxy
