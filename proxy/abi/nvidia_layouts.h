// Field layouts of the NVIDIA parameter structs the decoder renders: for each frontend escape and
// UVM ioctl, which members of the driver's struct it shows, of what kind, and whether the caller
// or the driver fills them. The one idea: offsets are never written here. A field names its
// member, and each release's offsets come from that release's generated tables (the structs
// differ between branches: EXPORT_TO_DMABUF_FD grew two fields after 535, RM_MAP_MEMORY_DMA
// a third flags word). Calls without a layout are named but their fields are not rendered.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace gdrproxy::proxy {

enum class NvFieldKind : uint8_t {
  kHandle,           // NvHandle, shown as hex
  kClass,            // NvU32 class id, shown as NAME(0xNNNN)
  kU8,               // shown decimal
  kU16,              // shown decimal
  kU32,              // shown decimal
  kI32,              // shown decimal, signed
  kHex32,            // flags and masks
  kHex64,            // addresses, offsets, lengths
  kFd,               // int file descriptor in the caller's fd table
  kUuid,             // 16-byte GPU UUID, shown GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
  kVidHeapFunction,  // NVOS32 function number, shown by name
};

enum class NvFieldDir : uint8_t {
  kIn,     // the caller fills it: shown when the call is made
  kOut,    // the driver fills it: shown with the result
  kInOut,  // both
};

// A field as declared: the name shown, the member of the driver's struct it is (a path such as
// "params.hRoot" where the member is nested; nullptr: the same as the name), kind and direction.
struct NvFieldSpec {
  const char* name;
  NvFieldKind kind;
  NvFieldDir dir = NvFieldDir::kIn;
  const char* member = nullptr;

  const char* path() const { return member ? member : name; }
};

// A field at one release's offset.
struct NvField {
  const char* name;
  uint16_t offset;
  NvFieldKind kind;
  NvFieldDir dir = NvFieldDir::kIn;
};

// Bytes a field of this kind occupies.
uint16_t nv_field_size(NvFieldKind kind);

// The declared fields of an escape's parameter struct, by the escape's name (numbers are reused
// between branches: 535's 0x5f is RM_NVLOG_CTRL, 580's RM_LOCKLESS_DIAGNOSTIC), empty when none
// is declared.
// RM_ALLOC, RM_CONTROL, CARD_INFO, ATTACH_GPUS_TO_FD, CHECK_VERSION_STR, IOCTL_XFER_CMD and
// EXPORT_TO_DMABUF_FD have shapes a flat layout cannot say and are decoded by hand.
std::span<const NvFieldSpec> nv_escape_fields(std::string_view name);
// The declared fields of a UVM ioctl's UVM_*_PARAMS, by the ioctl's name.
std::span<const NvFieldSpec> nv_uvm_fields(std::string_view name);

// nv_ioctl_export_to_dma_buf_fd_t at one release (its members moved between branches); -1 =
// the release's struct has no such member.
struct NvDmabufLayout {
  int16_t fd = -1, h_client = -1, total_objects = -1, num_objects = -1, index = -1, total_size = -1,
          mapping_type = -1, allow_mmap = -1, handles = -1, offsets = -1, sizes = -1, status = -1;
  uint16_t size = 0;         // sizeof the struct
  uint32_t max_handles = 0;  // NV_DMABUF_EXPORT_MAX_HANDLES: the handles array's length
};

// Offsets of the hand-decoded structs that are the same in every release the generated tables
// cover (nv-ioctl.h, nvos.h, cl0080.h, ctrl0000gpu.h), shared by the decoder, the supervisor's
// own driver queries and tests. tests/proxy/nvidia_layouts_test.cc checks every one of them
// against every release's generated offsets, so a release that moves one fails the build's tests
// before it can be decoded wrongly.
namespace nvlayout {
// NVOS21_PARAMETERS (32 bytes) and NVOS64_PARAMETERS (48 bytes), the two forms of RM_ALLOC.
inline constexpr uint16_t kAllocHRoot = 0, kAllocHParent = 4, kAllocHObjectNew = 8,
                          kAllocHClass = 12, kAllocPAllocParms = 16;
inline constexpr uint16_t kAlloc21ParamsSize = 24, kAlloc21Status = 28;
inline constexpr uint16_t kAlloc64PRights = 24, kAlloc64ParamsSize = 32, kAlloc64Flags = 36,
                          kAlloc64Status = 40;
inline constexpr uint16_t kNvos21Size = 32, kNvos64Size = 48;
// NVOS54_PARAMETERS (32 bytes), RM_CONTROL.
inline constexpr uint16_t kCtrlHClient = 0, kCtrlHObject = 4, kCtrlCmd = 8, kCtrlFlags = 12,
                          kCtrlParams = 16, kCtrlParamsSize = 24, kCtrlStatus = 28;
// nv_ioctl_card_info_t (72 bytes).
inline constexpr uint16_t kCardValid = 0, kCardPciDomain = 4, kCardPciBus = 8, kCardPciSlot = 9,
                          kCardPciFunction = 10, kCardVendorId = 12, kCardDeviceId = 14,
                          kCardGpuId = 16, kCardMinor = 56, kCardSize = 72;
// nv_ioctl_rm_api_version_t (72 bytes), CHECK_VERSION_STR.
inline constexpr uint16_t kVersionCmd = 0, kVersionReply = 4, kVersionString = 8,
                          kVersionStringLen = 64;
// NV0080_ALLOC_PARAMETERS (56 bytes), the RM_ALLOC parameters of NV01_DEVICE_0: deviceId is the
// device instance of the GPU the object stands for.
inline constexpr uint16_t kDeviceAllocDeviceId = 0, kDeviceAllocSize = 56;
// NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS (32 bytes).
inline constexpr uint16_t kIdInfoGpuId = 0, kIdInfoDeviceInstance = 8, kIdInfoSize = 32;
// nv_ioctl_xfer_t (16 bytes).
inline constexpr uint16_t kXferCmd = 0, kXferSize = 4, kXferPtr = 8;
// nv_ioctl_wait_open_complete_t: rc precedes the adapter's NV_STATUS.
inline constexpr uint16_t kWaitOpenRc = 0;
}  // namespace nvlayout

}  // namespace gdrproxy::proxy
