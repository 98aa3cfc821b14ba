// Field layouts of the NVIDIA parameter structs the decoder renders: for each frontend escape and
// UVM ioctl, which fields sit at which offset, of what kind, and whether the caller or the driver
// fills them. The declared layout, not a guess from the bytes, decides how a field is shown;
// calls without a layout are named but their fields are not rendered. Offsets are x86-64 and
// hold for the whole 580 branch (the structs did not change between 580.65.06 and 580.142).
#pragma once

#include <cstdint>
#include <span>

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

struct NvField {
  const char* name;
  uint16_t offset;
  NvFieldKind kind;
  NvFieldDir dir = NvFieldDir::kIn;
};

// Bytes a field of this kind occupies.
uint16_t nv_field_size(NvFieldKind kind);

// The layout of an escape's parameter struct (by IOC_NR), empty when none is declared. RM_ALLOC,
// RM_CONTROL, CARD_INFO, ATTACH_GPUS_TO_FD, CHECK_VERSION_STR, IOCTL_XFER_CMD and
// EXPORT_TO_DMABUF_FD have shapes a flat layout cannot say and are decoded by hand.
std::span<const NvField> nv_escape_layout(uint8_t nr);
// The layout of a UVM ioctl's UVM_*_PARAMS (by raw command number), empty when none is declared.
std::span<const NvField> nv_uvm_layout(uint32_t cmd);

// Offsets of the hand-decoded structs (nv-ioctl.h, nvos.h), shared by decoder and tests.
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
// nv_ioctl_export_to_dma_buf_fd_t (2608 bytes).
inline constexpr uint16_t kDmabufFd = 0, kDmabufHClient = 4, kDmabufTotalObjects = 8,
                          kDmabufNumObjects = 12, kDmabufIndex = 16, kDmabufTotalSize = 24,
                          kDmabufMappingType = 32, kDmabufAllowMmap = 33, kDmabufHandles = 36,
                          kDmabufOffsets = 552, kDmabufSizes = 1576, kDmabufStatus = 2600;
inline constexpr uint32_t kDmabufMaxHandles = 128;
// nv_ioctl_wait_open_complete_t: rc precedes the adapter's NV_STATUS.
inline constexpr uint16_t kWaitOpenRc = 0;
}  // namespace nvlayout

}  // namespace gdrproxy::proxy
