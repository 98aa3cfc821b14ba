// Decodes NVIDIA device ioctls into DecodedCall: the frontend escapes of /dev/nvidiactl and
// /dev/nvidiaN (dispatched by the driver on IOC_NR alone) and the raw-numbered UVM ioctls of
// /dev/nvidia-uvm. The one idea: the escape table decides how many bytes the parameters are and
// the declared layout decides what each field is; the decoder reads exactly that many bytes once
// and never follows a size or count from the caller's memory beyond the struct it declared.
// Anything that does not fit (IOC_SIZE disagreeing with the struct, unreadable memory, absurd
// counts) is recorded in `malformed`, and the policy fails closed on it.
#include "proxy/decode/nvidia_decoder.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/hex.h"
#include "proxy/abi/nvidia_control_names.h"
#include "proxy/abi/nvidia_generated.h"
#include "proxy/abi/nvidia_layouts.h"

namespace gdrproxy::proxy {
namespace {

namespace L = nvlayout;

// result_hints layout, written by the decoders and read by decode_nvidia_result.
constexpr uint32_t kHintFrontend = 1;
constexpr uint32_t kHintUvm = 2;
constexpr uint32_t kNoStatus = 0xffffffffu;
enum HintIndex { kHintKind, kHintId, kHintStatusOffset, kHintSize, kHintCount };

// Rendered lists stop here; the rest is counted.
constexpr uint32_t kMaxListed = 32;

using Bytes = std::span<const uint8_t>;

// Sized to what it formats: a control's name alone may be 76 characters, and a fixed buffer
// cut the refusal's line short.
std::string fmt(const char* f, auto... args) {
  const int n = std::snprintf(nullptr, 0, f, args...);
  if (n <= 0) return {};
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), f, args...);
  out.resize(static_cast<size_t>(n));
  return out;
}

template <typename T>
bool get(Bytes b, size_t off, T& v) {
  if (off > b.size() || sizeof(T) > b.size() - off) return false;
  std::memcpy(&v, b.data() + off, sizeof(T));
  return true;
}

// NAME(0xNNNN), or unknown(0xNNNN) when the table lacks the number.
std::string labelled(const char* name, uint64_t v, int digits) {
  std::string s = name ? name : "unknown";
  s += '(';
  s += hex(v, digits);
  s += ')';
  return s;
}

// Names come from the session's release: its exported classes and controls, its deprecated
// commands, and the controls it forwards to the firmware (nvidia_control_names.h).
const char* class_name(const NvidiaDriverAbi* abi, uint32_t id) {
  if (!abi) return nullptr;
  const NvClass* c = abi->find_class(id);
  return c ? c->name : nullptr;
}

std::string class_label(const NvidiaDriverAbi* abi, uint32_t id) {
  return labelled(class_name(abi, id), id, 4);
}

std::string control_label(const NvidiaDriverAbi& abi, uint32_t cmd) {
  const std::string name = nvidia_control_name(abi, cmd);
  return labelled(name.empty() ? nullptr : name.c_str(), cmd, 8);
}

std::string status_label(uint32_t status) {
  return labelled(nvidia_status_name(status), status, 1);
}

std::string vid_heap_function(uint32_t f) {
  // NVOS32_FUNCTION_* of nvos.h.
  switch (f) {
    case 2:
      return "ALLOC_SIZE(2)";
    case 3:
      return "FREE(3)";
    case 5:
      return "INFO(5)";
    case 6:
      return "ALLOC_TILED_PITCH_HEIGHT(6)";
    case 14:
      return "ALLOC_SIZE_RANGE(14)";
    case 15:
      return "REACQUIRE_COMPR(15)";
    case 16:
      return "RELEASE_COMPR(16)";
    case 18:
      return "GET_MEM_ALIGNMENT(18)";
    case 19:
      return "HW_ALLOC(19)";
    case 20:
      return "HW_FREE(20)";
    case 27:
      return "ALLOC_OS_DESCRIPTOR(27)";
    default:
      return fmt("unknown(%u)", f);
  }
}

std::string uuid(Bytes b, size_t off) {
  if (off > b.size() || b.size() - off < 16) return "?";
  const uint8_t* u = b.data() + off;
  std::string s = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += fmt("%02x", u[i]);
  }
  return s;
}

// A NUL-terminated string of at most `len` bytes, printable ASCII only.
std::string quoted_string(Bytes b, size_t off, size_t len) {
  std::string s = "\"";
  for (size_t i = 0; i < len && off + i < b.size(); ++i) {
    const uint8_t ch = b[off + i];
    if (ch == 0) break;
    s += (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\') ? static_cast<char>(ch) : '?';
  }
  return s + "\"";
}

// The value of one declared field; "?" if the bytes do not hold it.
std::string render_field(const NvField& f, Bytes b, const NvidiaDriverAbi* abi) {
  uint8_t u8 = 0;
  uint16_t u16 = 0;
  uint32_t u32 = 0;
  uint64_t u64 = 0;
  switch (f.kind) {
    case NvFieldKind::kU8:
      return get(b, f.offset, u8) ? std::to_string(u8) : "?";
    case NvFieldKind::kU16:
      return get(b, f.offset, u16) ? std::to_string(u16) : "?";
    case NvFieldKind::kHex64:
      return get(b, f.offset, u64) ? hex(u64) : "?";
    case NvFieldKind::kUuid:
      return uuid(b, f.offset);
    default:
      break;
  }
  if (!get(b, f.offset, u32)) return "?";
  switch (f.kind) {
    case NvFieldKind::kHandle:
    case NvFieldKind::kHex32:
      return hex(u32);
    case NvFieldKind::kClass:
      return class_label(abi, u32);
    case NvFieldKind::kI32:
    case NvFieldKind::kFd:
      return std::to_string(static_cast<int32_t>(u32));
    case NvFieldKind::kVidHeapFunction:
      return vid_heap_function(u32);
    default:
      return std::to_string(u32);
  }
}

void add(DecodedCall& c, std::string name, std::string value) {
  if (!c.render) return;
  if (c.args.empty()) c.args.reserve(8);
  c.args.push_back({std::move(name), std::move(value)});
}

void add_fields(DecodedCall& c, std::span<const NvField> layout, Bytes b,
                const NvidiaDriverAbi& abi) {
  for (const NvField& f : layout) {
    if (f.dir == NvFieldDir::kOut) continue;
    if (c.render) add(c, f.name, render_field(f, b, &abi));
    uint32_t id = 0;
    if (f.kind == NvFieldKind::kClass && get(b, f.offset, id)) {
      c.keys.nv_class = id;
      c.keys.nv_needs = nvidia_class_access(*abi.generated, id);
    }
  }
}

void set_result(DecodedCall& c, uint32_t kind, uint32_t id, uint64_t addr, uint32_t size,
                int32_t status_offset) {
  c.result_regions[0] = {addr, size};
  c.result_hints.assign(kHintCount, 0);
  c.result_hints[kHintKind] = kind;
  c.result_hints[kHintId] = id;
  c.result_hints[kHintStatusOffset] =
      status_offset < 0 ? kNoStatus : static_cast<uint32_t>(status_offset);
  c.result_hints[kHintSize] = size;
}

// ---- Hand-decoded escapes ----

// The GPU an NV01_DEVICE_0 object stands for: deviceId, first field of NV0080_ALLOC_PARAMETERS,
// read one level down from the caller's memory (paramsSize is not trusted: the driver copies the
// class's own parameter size). Unreadable is malformed (denied): the driver
// maps an unpopulated instance to its first GPU, so "unknown" must never run.
void decode_device_instance(DecodedCall& c, uint64_t p_params, const MemoryReader& mem) {
  uint8_t raw[4];
  if (p_params == 0 || !mem.read(p_params, raw)) {
    c.malformed = "RM_ALLOC(NV01_DEVICE_0) parameters at " + hex(p_params) +
                  " are unreadable: the GPU it names cannot be told";
    return;
  }
  uint32_t instance = 0;
  std::memcpy(&instance, raw + L::kDeviceAllocDeviceId, sizeof instance);
  c.keys.nv_device_instance = instance;
  add(c, "deviceId", std::to_string(instance));
}

// "in 580.173.02's tables": how a size mismatch names the release that fixed the size.
std::string in_tables(const NvidiaDriverAbi& abi) {
  return " in " + std::string(abi.version) + "'s tables";
}

void decode_rm_alloc(DecodedCall& c, Bytes b, const NvidiaDriverAbi& abi, const MemoryReader& mem) {
  uint32_t h_root = 0, h_parent = 0, h_new = 0, h_class = 0, params_size = 0;
  uint64_t p_params = 0;
  get(b, L::kAllocHRoot, h_root);
  get(b, L::kAllocHParent, h_parent);
  get(b, L::kAllocHObjectNew, h_new);
  get(b, L::kAllocHClass, h_class);
  get(b, L::kAllocPAllocParms, p_params);
  const bool v64 = b.size() == L::kNvos64Size;
  get(b, v64 ? L::kAlloc64ParamsSize : L::kAlloc21ParamsSize, params_size);
  c.keys.nv_class = h_class;
  c.keys.nv_needs = nvidia_class_access(*abi.generated, h_class);
  // The driver copies paramsSize bytes of a class's parameters; one whose tables fix their size
  // is refused when the caller names another (a different struct than the one judged).
  const NvGenClass* cls = abi.generated->find_class(h_class);
  if (cls && cls->param_size > 0 && params_size != 0 &&
      params_size != static_cast<uint32_t>(cls->param_size))
    c.malformed = fmt("RM_ALLOC %s(0x%x) paramsSize %u is not the %d bytes of its parameters",
                      cls->name, h_class, params_size, cls->param_size) +
                  in_tables(abi);
  if (c.render) {
    add(c, "hRoot", hex(h_root));
    add(c, "hObjectParent", hex(h_parent));
    add(c, "hObjectNew", hex(h_new));
    add(c, "hClass", class_label(&abi, h_class));
    add(c, "pAllocParms", hex(p_params));
    add(c, "paramsSize", std::to_string(params_size));
    if (v64) {
      uint64_t rights = 0;
      uint32_t flags = 0;
      get(b, L::kAlloc64PRights, rights);
      get(b, L::kAlloc64Flags, flags);
      add(c, "pRightsRequested", hex(rights));
      add(c, "flags", hex(flags));
    }
  }
  if (h_class == kNvClassDevice) decode_device_instance(c, p_params, mem);
}

void decode_rm_control(DecodedCall& c, Bytes b, const NvidiaDriverAbi& abi) {
  uint32_t h_client = 0, h_object = 0, cmd = 0, flags = 0, params_size = 0;
  uint64_t params = 0;
  get(b, L::kCtrlHClient, h_client);
  get(b, L::kCtrlHObject, h_object);
  get(b, L::kCtrlCmd, cmd);
  get(b, L::kCtrlFlags, flags);
  get(b, L::kCtrlParams, params);
  get(b, L::kCtrlParamsSize, params_size);
  c.keys.nv_control = cmd;
  const NvControlAccess a = nvidia_control_access(*abi.generated, cmd);
  c.keys.nv_needs = a.needs;
  // The driver refuses a fixed-size control whose paramsSize differs (control.c); so does the
  // policy, which judges the control by what its parameters are.
  if (a.route == NvRoute::kExported && a.control->param_size > 0 &&
      params_size != static_cast<uint32_t>(a.control->param_size))
    c.malformed = fmt("RM_CONTROL %s(0x%x) paramsSize %u is not the %d bytes of its parameters",
                      a.control->name, cmd, params_size, a.control->param_size) +
                  in_tables(abi);
  if (!c.render) return;
  add(c, "hClient", hex(h_client));
  add(c, "hObject", hex(h_object));
  add(c, "cmd", control_label(abi, cmd));
  add(c, "flags", hex(flags));
  add(c, "params", hex(params));
  add(c, "paramsSize", std::to_string(params_size));
}

void decode_attach_gpus(DecodedCall& c, Bytes b) {
  const uint32_t n = static_cast<uint32_t>(b.size() / 4);
  std::string ids = "[";
  for (uint32_t i = 0; i < n && i < kMaxListed; ++i) {
    uint32_t id = 0;
    get(b, i * 4, id);
    ids += (i ? "," : "") + hex(id);
  }
  if (n > kMaxListed) ids += fmt(",...(+%u)", n - kMaxListed);
  add(c, "gpu_ids", ids + "]");
}

void decode_check_version(DecodedCall& c, Bytes b) {
  uint32_t cmd = 0;
  get(b, L::kVersionCmd, cmd);
  // NV_RM_API_VERSION_CMD_*: strict is 0, relaxed and query are the characters '1' and '2'.
  const char* name = cmd == 0 ? "STRICT" : cmd == '1' ? "RELAXED" : cmd == '2' ? "QUERY" : nullptr;
  add(c, "cmd", name ? fmt("%s(0x%x)", name, cmd) : fmt("unknown(0x%x)", cmd));
  add(c, "versionString", quoted_string(b, L::kVersionString, L::kVersionStringLen));
}

// A member of a release's struct; false (and nothing read) where the release has none.
template <typename T>
bool get_at(Bytes b, int16_t off, T& v) {
  return off >= 0 && get(b, static_cast<size_t>(off), v);
}

// Returns false (and sets malformed) when the counts are impossible.
bool decode_export_dmabuf(DecodedCall& c, Bytes b, const NvDmabufLayout& l) {
  uint32_t h_client = 0, total = 0, num = 0, index = 0;
  uint64_t total_size = 0;
  uint8_t mapping = 0, allow_mmap = 0;
  get_at(b, l.h_client, h_client);
  get_at(b, l.total_objects, total);
  get_at(b, l.num_objects, num);
  get_at(b, l.index, index);
  get_at(b, l.total_size, total_size);
  add(c, "hClient", hex(h_client));
  add(c, "totalObjects", std::to_string(total));
  add(c, "numObjects", std::to_string(num));
  add(c, "index", std::to_string(index));
  add(c, "totalSize", hex(total_size));
  // NV_DMABUF_EXPORT_MAPPING_TYPE_*, where the release has the field.
  if (get_at(b, l.mapping_type, mapping))
    add(c, "mappingType",
        mapping == 0   ? "DEFAULT(0)"
        : mapping == 1 ? "FORCE_PCIE(1)"
                       : fmt("unknown(%u)", mapping));
  if (get_at(b, l.allow_mmap, allow_mmap)) add(c, "bAllowMmap", std::to_string(allow_mmap));
  const uint32_t shown = num < l.max_handles ? num : l.max_handles;
  std::string objs = "[";
  for (uint32_t i = 0; i < shown && i < kMaxListed; ++i) {
    uint32_t h = 0;
    uint64_t off = 0, size = 0;
    if (l.handles >= 0) get(b, static_cast<size_t>(l.handles) + 4 * i, h);
    if (l.offsets >= 0) get(b, static_cast<size_t>(l.offsets) + 8 * i, off);
    if (l.sizes >= 0) get(b, static_cast<size_t>(l.sizes) + 8 * i, size);
    objs += (i ? "," : "") + hex(h) + "@" + hex(off) + "+" + hex(size);
  }
  if (shown > kMaxListed) objs += fmt(",...(+%u)", shown - kMaxListed);
  add(c, "objects", objs + "]");
  if (num > l.max_handles) {
    c.malformed = fmt("EXPORT_TO_DMABUF_FD numObjects %u exceeds the driver's limit of %u", num,
                      l.max_handles);
    return false;
  }
  return true;
}

void decode_escape(DecodedCall& c, uint8_t nr, uint32_t size, uint64_t arg, const MemoryReader& mem,
                   const NvidiaDriverAbi& abi, bool via_xfer);

void decode_xfer(DecodedCall& c, uint32_t size, uint64_t arg, const MemoryReader& mem,
                 const NvidiaDriverAbi& abi) {
  c.name = "IOCTL_XFER_CMD";
  if (size != 16) {
    c.malformed = fmt("IOCTL_XFER_CMD IOC_SIZE %u is not sizeof(nv_ioctl_xfer_t) 16", size);
    return;
  }
  uint8_t raw[16];
  if (!mem.read(arg, raw)) {
    c.malformed = "IOCTL_XFER_CMD header at " + hex(arg) + " is unreadable";
    return;
  }
  Bytes b(raw);
  uint32_t inner_cmd = 0, inner_size = 0;
  uint64_t ptr = 0;
  get(b, L::kXferCmd, inner_cmd);
  get(b, L::kXferSize, inner_size);
  get(b, L::kXferPtr, ptr);
  add(c, "xfer_cmd", hex(inner_cmd));
  add(c, "xfer_size", std::to_string(inner_size));
  add(c, "xfer_ptr", hex(ptr));
  if (inner_cmd > 0xff) {
    // The driver switches on the full number and rejects it; there is no escape to name.
    c.name = fmt("IOCTL_XFER_CMD(ESC_0x%x(unknown))", inner_cmd);
    return;
  }
  if (inner_size > kNvAbsoluteMaxIoctlSize) {
    c.malformed = fmt("IOCTL_XFER_CMD size %u exceeds the driver's limit of %u", inner_size,
                      kNvAbsoluteMaxIoctlSize);
    c.keys.nv_escape = static_cast<uint8_t>(inner_cmd);
    return;
  }
  decode_escape(c, static_cast<uint8_t>(inner_cmd), inner_size, ptr, mem, abi, true);
  c.name = "IOCTL_XFER_CMD(" + c.name + ")";
}

void decode_escape(DecodedCall& c, uint8_t nr, uint32_t size, uint64_t arg, const MemoryReader& mem,
                   const NvidiaDriverAbi& abi, bool via_xfer) {
  c.keys.nv_escape = nr;
  if (nr == kNvEscIoctlXferCmd) {
    if (via_xfer) {
      // The driver does not unwrap twice; the inner escape would be rejected.
      c.name = "IOCTL_XFER_CMD";
      c.malformed = "IOCTL_XFER_CMD nested inside IOCTL_XFER_CMD";
      return;
    }
    decode_xfer(c, size, arg, mem, abi);
    return;
  }
  const NvEscape* e = abi.find_escape(nr);
  if (e == nullptr) {
    c.name = fmt("ESC_0x%02x(unknown)", nr);
    add(c, "size", std::to_string(size));
    add(c, "arg", hex(arg));
    return;
  }
  c.name = e->name;
  c.keys.nv_named = true;
  if (e->elem_size != 0) {
    if (size == 0 || size % e->elem_size != 0) {
      c.malformed = fmt("%s size %u is not a non-zero multiple of %u", e->name, size,
                        static_cast<unsigned>(e->elem_size)) +
                    in_tables(abi);
    }
  } else if (e->param_size == 0) {
    // The driver does not dispatch this escape by a known struct: name it only.
    add(c, "size", std::to_string(size));
    add(c, "arg", hex(arg));
    return;
  } else if (size != e->param_size && (e->alt_param_size == 0 || size != e->alt_param_size)) {
    c.malformed = (e->alt_param_size ? fmt("%s size %u is neither %u nor %u", e->name, size,
                                           static_cast<unsigned>(e->param_size),
                                           static_cast<unsigned>(e->alt_param_size))
                                     : fmt("%s size %u is not sizeof its parameters %u", e->name,
                                           size, static_cast<unsigned>(e->param_size))) +
                  in_tables(abi);
  }
  if (!c.malformed.empty()) {
    add(c, "size", std::to_string(size));
    add(c, "arg", hex(arg));
    return;
  }
  std::vector<uint8_t> params(size);
  if (!mem.read(arg, params)) {
    c.malformed = fmt("%s parameters (%u bytes) at ", e->name, size) + hex(arg) + " are unreadable";
    return;
  }
  const Bytes b(params);
  const int32_t status_offset =
      size == e->param_size || e->alt_param_size == 0 ? e->status_offset : e->alt_status_offset;
  switch (nr) {
    case kNvEscRmAlloc:
      decode_rm_alloc(c, b, abi, mem);
      break;
    case kNvEscRmControl:
      decode_rm_control(c, b, abi);
      break;
    case kNvEscCardInfo:
      add(c, "count", std::to_string(size / e->elem_size));
      break;
    case kNvEscAttachGpusToFd:
      decode_attach_gpus(c, b);
      break;
    case kNvEscCheckVersionStr:
      decode_check_version(c, b);
      break;
    case kNvEscExportToDmabufFd:
      if (!decode_export_dmabuf(c, b, abi.dmabuf)) return;
      break;
    default:
      add_fields(c, e->fields, b, abi);
      break;
  }
  set_result(c, kHintFrontend, nr, arg, size, status_offset);
  c.nvidia_abi = &abi;
}

// ---- Results ----

void add_out_fields(std::span<const NvField> layout, Bytes b, std::vector<DecodedField>& out) {
  for (const NvField& f : layout) {
    if (f.dir == NvFieldDir::kIn) continue;
    out.push_back({f.name, render_field(f, b, nullptr)});
  }
}

void decode_frontend_result(uint8_t nr, Bytes b, const NvidiaDriverAbi& abi,
                            std::vector<DecodedField>& out) {
  switch (nr) {
    case kNvEscRmAlloc: {
      uint32_t h = 0;
      if (get(b, L::kAllocHObjectNew, h)) out.push_back({"hObjectNew", hex(h)});
      return;
    }
    case kNvEscExportToDmabufFd: {
      int32_t fd = 0;
      if (get_at(b, abi.dmabuf.fd, fd)) out.push_back({"fd", std::to_string(fd)});
      return;
    }
    case kNvEscCheckVersionStr: {
      uint32_t reply = 0;
      if (get(b, L::kVersionReply, reply)) {
        // NV_RM_API_VERSION_REPLY_*.
        out.push_back({"reply", reply == 1   ? "RECOGNIZED(1)"
                                : reply == 0 ? "UNRECOGNIZED(0)"
                                             : fmt("unknown(%u)", reply)});
      }
      out.push_back({"versionString", quoted_string(b, L::kVersionString, L::kVersionStringLen)});
      return;
    }
    case kNvEscCardInfo: {
      std::string cards = "[";
      uint32_t listed = 0;
      for (size_t off = 0; off + L::kCardSize <= b.size(); off += L::kCardSize) {
        uint8_t valid = 0, bus = 0, slot = 0, fn = 0;
        uint16_t vendor = 0, device = 0;
        uint32_t domain = 0, gpu_id = 0, minor = 0;
        get(b, off + L::kCardValid, valid);
        if (!valid) continue;
        if (listed++ == kMaxListed) break;
        get(b, off + L::kCardPciDomain, domain);
        get(b, off + L::kCardPciBus, bus);
        get(b, off + L::kCardPciSlot, slot);
        get(b, off + L::kCardPciFunction, fn);
        get(b, off + L::kCardVendorId, vendor);
        get(b, off + L::kCardDeviceId, device);
        get(b, off + L::kCardGpuId, gpu_id);
        get(b, off + L::kCardMinor, minor);
        cards += (listed > 1 ? "," : "") +
                 fmt("{gpu_id=0x%x pci=%04x:%02x:%02x.%x id=%04x:%04x minor=%u}", gpu_id, domain,
                     bus, slot, fn, vendor, device, minor);
      }
      out.push_back({"cards", cards + "]"});
      return;
    }
    default:
      if (const NvEscape* e = abi.find_escape(nr)) add_out_fields(e->fields, b, out);
      return;
  }
}

}  // namespace

bool nv_escape_keys_from_request(const NvidiaDriverAbi& abi, uint8_t nr) {
  const NvEscape* e = abi.find_escape(nr);
  if (e == nullptr || e->elem_size != 0 || e->param_size == 0) return false;
  // The escapes decode_escape hands to their own decoders (the switch there).
  switch (nr) {
    case kNvEscIoctlXferCmd:
    case kNvEscRmAlloc:
    case kNvEscRmControl:
    case kNvEscCardInfo:
    case kNvEscAttachGpusToFd:
    case kNvEscCheckVersionStr:
    case kNvEscExportToDmabufFd:
      return false;
    default:
      break;
  }
  return std::none_of(e->fields.begin(), e->fields.end(),
                      [](const NvField& f) { return f.kind == NvFieldKind::kClass; });
}

DecodedCall decode_nvidia_frontend_ioctl(uint32_t cmd, uint64_t arg, const MemoryReader& mem,
                                         const NvidiaDriverAbi& abi, DecodeDepth depth) {
  DecodedCall c;
  decode_nvidia_frontend_ioctl(c, cmd, arg, mem, abi, depth);
  return c;
}

void decode_nvidia_frontend_ioctl(DecodedCall& c, uint32_t cmd, uint64_t arg,
                                  const MemoryReader& mem, const NvidiaDriverAbi& abi,
                                  DecodeDepth depth) {
  c.clear();
  c.render = depth == DecodeDepth::kFull;
  c.device_class = DeviceClass::kNvidiaFrontend;
  c.cmd = cmd;
  const uint8_t nr = cmd & 0xff;
  const uint8_t type = (cmd >> 8) & 0xff;
  const uint32_t size = (cmd >> 16) & 0x3fff;
  decode_escape(c, nr, size, arg, mem, abi, false);
  // The driver ignores the type byte; show it when it is not the customary 'F'.
  if (type != kNvIoctlType) add(c, "ioc_type", fmt("0x%02x", type));
}

DecodedCall decode_nvidia_uvm_ioctl(uint32_t cmd, uint64_t arg, const MemoryReader& mem,
                                    const NvidiaDriverAbi& abi, DecodeDepth depth) {
  DecodedCall c;
  decode_nvidia_uvm_ioctl(c, cmd, arg, mem, abi, depth);
  return c;
}

void decode_nvidia_uvm_ioctl(DecodedCall& c, uint32_t cmd, uint64_t arg, const MemoryReader& mem,
                             const NvidiaDriverAbi& abi, DecodeDepth depth) {
  c.clear();
  c.render = depth == DecodeDepth::kFull;
  c.device_class = DeviceClass::kNvidiaUvm;
  c.cmd = cmd;
  c.keys.uvm_cmd = cmd;
  const NvUvmIoctl* u = abi.find_uvm(cmd);
  if (u == nullptr) {
    c.name = fmt("UVM_0x%x(unknown)", cmd);
    add(c, "arg", hex(arg));
    return;
  }
  c.name = u->name;
  c.keys.nv_named = true;
  if (u->param_size == 0) return;  // takes no parameters (UVM_DEINITIALIZE)
  std::vector<uint8_t> params(u->param_size);
  if (!mem.read(arg, params)) {
    c.malformed =
        fmt("%s parameters (%u bytes) at ", u->name, static_cast<unsigned>(u->param_size)) +
        hex(arg) + " are unreadable";
    return;
  }
  add_fields(c, u->fields, params, abi);
  set_result(c, kHintUvm, cmd, arg, u->param_size, u->status_offset);
  c.nvidia_abi = &abi;
}

void decode_nvidia_result(const DecodedCall& call, std::span<const uint8_t> region0,
                          std::span<const uint8_t> /*region1*/, std::vector<DecodedField>& out) {
  const auto& h = call.result_hints;
  if (h.size() < kHintCount) return;  // nothing was declared for this call
  const uint32_t kind = h[kHintKind];
  if ((kind != kHintFrontend && kind != kHintUvm) || !call.nvidia_abi) return;
  const NvidiaDriverAbi& abi = *call.nvidia_abi;
  if (region0.size() < h[kHintSize]) {
    out.push_back({"result", fmt("unreadable (%zu of %u bytes)", region0.size(), h[kHintSize])});
    return;
  }
  const Bytes b = region0.first(h[kHintSize]);
  uint32_t status = 0;
  if (h[kHintStatusOffset] != kNoStatus && get(b, h[kHintStatusOffset], status)) {
    const char* field = kind == kHintUvm                       ? "rmStatus"
                        : h[kHintId] == kNvEscWaitOpenComplete ? "adapterStatus"
                                                               : "status";
    out.push_back({field, status_label(status)});
  }
  if (kind == kHintUvm) {
    if (const NvUvmIoctl* u = abi.find_uvm(h[kHintId])) add_out_fields(u->fields, b, out);
  } else if (h[kHintId] <= 0xff) {
    decode_frontend_result(static_cast<uint8_t>(h[kHintId]), b, abi, out);
  }
}

std::string nvidia_call_subject(const DecodedCall& call, const NvidiaDriverAbi& abi) {
  const NvGenTables* gen = abi.generated;
  const std::string release = gen ? std::string(gen->version) : std::string(abi.version);
  if (call.keys.nv_control) {
    const uint32_t cmd = *call.keys.nv_control;
    std::string s = "cmd=" + control_label(abi, cmd);
    const NvControlAccess a = gen ? nvidia_control_access(*gen, cmd) : NvControlAccess{};
    const std::string route = gen ? nv_route_text(*gen, cmd, a) : std::string();
    if (const NvGenControl* g = a.control) {
      s += std::string(" [") + g->nvoc_class;
      if (!route.empty()) s += ", " + route;
      if (g->param_size >= 0) s += ", params " + std::to_string(g->param_size) + " bytes";
      return s + ", flags " + gen->control_flags(g->flags) + "]";
    }
    const NvGenClass* cls = gen ? nvidia_generated_class_of_control(*gen, cmd) : nullptr;
    s += " [";
    if (cls) s += std::string("class ") + cls->name + ", ";
    if (!route.empty()) return s + route + "]";
    return s + "neither exported nor forwarded by driver " + release + "]";
  }
  if (call.keys.nv_class) {
    const uint32_t id = *call.keys.nv_class;
    std::string s = "hClass=" + class_label(&abi, id);
    const NvGenClass* g = gen ? gen->find_class(id) : nullptr;
    if (!g) return s + " [not allocatable in driver " + release + "]";
    const NvRequires who = nvidia_class_access(*gen, id);
    s += std::string(" [") + g->nvoc_class;
    if (who != NvRequires::kAnyone)
      s += std::string(", allocated by ") + nv_requires_name(who) + " only";
    if (g->param_size >= 0) s += ", params " + std::to_string(g->param_size) + " bytes";
    return s + ", flags " + gen->class_flags(g->rs_flags) + "]";
  }
  return {};
}

}  // namespace gdrproxy::proxy
