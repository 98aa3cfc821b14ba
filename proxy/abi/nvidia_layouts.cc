// Field layouts of the NVIDIA parameter structs (see nvidia_layouts.h). Offsets follow nvos.h,
// nv-ioctl.h, nv-ioctl-numa.h, nv-unix-nvos-params-wrappers.h and uvm_ioctl.h on x86-64; the
// status field of each struct is not listed here (its offset is in the escape/UVM table).
#include "proxy/abi/nvidia_layouts.h"

namespace gdrproxy::proxy {
namespace {

using K = NvFieldKind;
using D = NvFieldDir;

// ---- Frontend escapes ----
constexpr NvField kAllocMemory[] = {
    // nv_ioctl_nvos02_parameters_with_fd: NVOS02_PARAMETERS followed by the mmap fd.
    {"hRoot", 0, K::kHandle},
    {"hObjectParent", 4, K::kHandle},
    {"hObjectNew", 8, K::kHandle},
    {"hClass", 12, K::kClass},
    {"flags", 16, K::kHex32},
    {"pMemory", 24, K::kHex64, D::kInOut},
    {"limit", 32, K::kHex64, D::kInOut},
    {"fd", 48, K::kFd},
};
constexpr NvField kAllocObject[] = {
    {"hRoot", 0, K::kHandle},
    {"hObjectParent", 4, K::kHandle},
    {"hObjectNew", 8, K::kHandle},
    {"hClass", 12, K::kClass},
};
constexpr NvField kFree[] = {
    {"hRoot", 0, K::kHandle},
    {"hObjectParent", 4, K::kHandle},
    {"hObjectOld", 8, K::kHandle},
};
constexpr NvField kDupObject[] = {
    {"hClient", 0, K::kHandle},
    {"hParent", 4, K::kHandle},
    {"hObject", 8, K::kHandle, D::kInOut},
    {"hClientSrc", 12, K::kHandle},
    {"hObjectSrc", 16, K::kHandle},
    {"flags", 20, K::kHex32},
};
constexpr NvField kShare[] = {
    // NVOS57: the RS_SHARE_POLICY {target, accessMask, type, action} sits at offset 8.
    {"hClient", 0, K::kHandle},    {"hObject", 4, K::kHandle}, {"target", 8, K::kHex32},
    {"accessMask", 12, K::kHex32}, {"type", 16, K::kU16},      {"action", 18, K::kU8},
};
constexpr NvField kIdleChannels[] = {
    {"hClient", 0, K::kHandle},    {"hDevice", 4, K::kHandle},   {"hChannel", 8, K::kHandle},
    {"numChannels", 12, K::kU32},  {"phClients", 16, K::kHex64}, {"phDevices", 24, K::kHex64},
    {"phChannels", 32, K::kHex64}, {"flags", 40, K::kHex32},     {"timeout", 44, K::kU32},
};
constexpr NvField kVidHeapControl[] = {
    {"hRoot", 0, K::kHandle},
    {"hObjectParent", 4, K::kHandle},
    {"function", 8, K::kVidHeapFunction},
    {"hVASpace", 12, K::kHandle},
    {"total", 24, K::kHex64, D::kOut},
    {"free", 32, K::kHex64, D::kOut},
};
constexpr NvField kMapMemory[] = {
    // nv_ioctl_nvos33_parameters_with_fd: NVOS33_PARAMETERS followed by the mmap fd.
    {"hClient", 0, K::kHandle}, {"hDevice", 4, K::kHandle},
    {"hMemory", 8, K::kHandle}, {"offset", 16, K::kHex64},
    {"length", 24, K::kHex64},  {"pLinearAddress", 32, K::kHex64, D::kOut},
    {"flags", 44, K::kHex32},   {"fd", 48, K::kFd},
};
constexpr NvField kUnmapMemory[] = {
    {"hClient", 0, K::kHandle},        {"hDevice", 4, K::kHandle}, {"hMemory", 8, K::kHandle},
    {"pLinearAddress", 16, K::kHex64}, {"flags", 28, K::kHex32},
};
constexpr NvField kGetEventData[] = {
    {"pEvent", 0, K::kHex64},
    {"MoreEvents", 8, K::kU32, D::kOut},
};
constexpr NvField kAllocContextDma2[] = {
    {"hObjectParent", 0, K::kHandle}, {"hSubDevice", 4, K::kHandle}, {"hObjectNew", 8, K::kHandle},
    {"hClass", 12, K::kClass},        {"flags", 16, K::kHex32},      {"selector", 20, K::kU32},
    {"hMemory", 24, K::kHandle},      {"offset", 32, K::kHex64},     {"limit", 40, K::kHex64},
};
constexpr NvField kMapMemoryDma[] = {
    {"hClient", 0, K::kHandle},      {"hDevice", 4, K::kHandle},
    {"hDma", 8, K::kHandle},         {"hMemory", 12, K::kHandle},
    {"offset", 16, K::kHex64},       {"length", 24, K::kHex64},
    {"flags", 32, K::kHex32},        {"flags2", 36, K::kHex32},
    {"kindOverride", 40, K::kHex32}, {"dmaOffset", 48, K::kHex64, D::kInOut},
};
constexpr NvField kUnmapMemoryDma[] = {
    {"hClient", 0, K::kHandle},  {"hDevice", 4, K::kHandle}, {"hDma", 8, K::kHandle},
    {"hMemory", 12, K::kHandle}, {"flags", 16, K::kHex32},   {"dmaOffset", 24, K::kHex64},
    {"size", 32, K::kHex64},
};
constexpr NvField kBindContextDma[] = {
    {"hClient", 0, K::kHandle},
    {"hChannel", 4, K::kHandle},
    {"hCtxDma", 8, K::kHandle},
};
constexpr NvField kUpdateDeviceMappingInfo[] = {
    {"hClient", 0, K::kHandle},        {"hDevice", 4, K::kHandle},
    {"hMemory", 8, K::kHandle},        {"pOldCpuAddress", 16, K::kHex64},
    {"pNewCpuAddress", 24, K::kHex64},
};
constexpr NvField kLocklessDiagnostic[] = {{"cmd", 0, K::kHex32}};
constexpr NvField kRegisterFd[] = {{"ctl_fd", 0, K::kFd}};
constexpr NvField kOsEvent[] = {
    {"hClient", 0, K::kHandle},
    {"hDevice", 4, K::kHandle},
    {"fd", 8, K::kFd},
};
constexpr NvField kStatusCode[] = {
    {"domain", 0, K::kHex32},
    {"bus", 4, K::kU8},
    {"slot", 5, K::kU8},
};
constexpr NvField kQueryDeviceIntr[] = {{"intrStatus", 0, K::kHex32, D::kOut}};
constexpr NvField kSysParams[] = {{"memblock_size", 0, K::kHex64}};
constexpr NvField kNumaInfo[] = {
    {"nid", 0, K::kI32, D::kOut},
    {"numa_status", 4, K::kI32, D::kOut},
    {"memblock_size", 8, K::kHex64, D::kOut},
    {"numa_mem_addr", 16, K::kHex64, D::kOut},
    {"numa_mem_size", 24, K::kHex64, D::kOut},
};
constexpr NvField kSetNumaStatus[] = {{"numa_status", 0, K::kI32}};
constexpr NvField kWaitOpenComplete[] = {{"rc", 0, K::kI32, D::kOut}};

// ---- UVM ----
constexpr NvField kUvmInitialize[] = {{"flags", 0, K::kHex64}};
constexpr NvField kUvmMmInitialize[] = {{"uvmFd", 0, K::kFd}};
constexpr NvField kUvmRegisterGpu[] = {
    {"gpu_uuid", 0, K::kUuid, D::kInOut}, {"rmCtrlFd", 24, K::kFd},
    {"hClient", 28, K::kHandle},          {"hSmcPartRef", 32, K::kHandle},
    {"numaEnabled", 16, K::kU8, D::kOut}, {"numaNodeId", 20, K::kI32, D::kOut},
};
constexpr NvField kUvmUuidOnly[] = {{"gpuUuid", 0, K::kUuid}};
constexpr NvField kUvmRegisterGpuVaspace[] = {
    {"gpuUuid", 0, K::kUuid},
    {"rmCtrlFd", 16, K::kFd},
    {"hClient", 20, K::kHandle},
    {"hVaSpace", 24, K::kHandle},
};
constexpr NvField kUvmRegisterChannel[] = {
    {"gpuUuid", 0, K::kUuid},     {"rmCtrlFd", 16, K::kFd}, {"hClient", 20, K::kHandle},
    {"hChannel", 24, K::kHandle}, {"base", 32, K::kHex64},  {"length", 40, K::kHex64},
};
constexpr NvField kUvmUnregisterChannel[] = {
    {"gpuUuid", 0, K::kUuid},
    {"hClient", 16, K::kHandle},
    {"hChannel", 20, K::kHandle},
};
constexpr NvField kUvmPeerAccess[] = {{"gpuUuidA", 0, K::kUuid}, {"gpuUuidB", 16, K::kUuid}};
constexpr NvField kUvmCreateRangeGroup[] = {{"rangeGroupId", 0, K::kHex64, D::kOut}};
constexpr NvField kUvmDestroyRangeGroup[] = {{"rangeGroupId", 0, K::kHex64}};
constexpr NvField kUvmSetRangeGroup[] = {
    {"rangeGroupId", 0, K::kHex64},
    {"requestedBase", 8, K::kHex64},
    {"length", 16, K::kHex64},
};
constexpr NvField kUvmMapExternalAllocation[] = {
    {"base", 0, K::kHex64},        {"length", 8, K::kHex64},
    {"offset", 16, K::kHex64},     {"gpuAttributesCount", 9240, K::kU32},
    {"rmCtrlFd", 9248, K::kFd},    {"hClient", 9252, K::kHandle},
    {"hMemory", 9256, K::kHandle},
};
constexpr NvField kUvmBaseLength[] = {{"base", 0, K::kHex64}, {"length", 8, K::kHex64}};
constexpr NvField kUvmRequestedBaseLength[] = {
    {"requestedBase", 0, K::kHex64},
    {"length", 8, K::kHex64},
};
constexpr NvField kUvmPageableMemAccess[] = {{"pageableMemAccess", 0, K::kU8, D::kOut}};
constexpr NvField kUvmSetPreferredLocation[] = {
    {"requestedBase", 0, K::kHex64},
    {"length", 8, K::kHex64},
    {"preferredLocation", 16, K::kUuid},
    {"preferredCpuNumaNode", 32, K::kI32},
};
constexpr NvField kUvmAccessedBy[] = {
    {"requestedBase", 0, K::kHex64},
    {"length", 8, K::kHex64},
    {"accessedByUuid", 16, K::kUuid},
};
constexpr NvField kUvmMigrate[] = {
    {"base", 0, K::kHex64},
    {"length", 8, K::kHex64},
    {"destinationUuid", 16, K::kUuid},
    {"flags", 32, K::kHex32},
};
constexpr NvField kUvmBaseLengthUuid[] = {
    {"base", 0, K::kHex64},
    {"length", 8, K::kHex64},
    {"gpuUuid", 16, K::kUuid},
};
constexpr NvField kUvmPageableMemAccessOnGpu[] = {
    {"gpu_uuid", 0, K::kUuid},
    {"pageableMemAccess", 16, K::kU8, D::kOut},
};

}  // namespace

uint16_t nv_field_size(NvFieldKind kind) {
  switch (kind) {
    case K::kU8:
      return 1;
    case K::kU16:
      return 2;
    case K::kHex64:
      return 8;
    case K::kUuid:
      return 16;
    default:
      return 4;
  }
}

std::span<const NvField> nv_escape_layout(uint8_t nr) {
  switch (nr) {
    case 0x27:
      return kAllocMemory;
    case 0x28:
      return kAllocObject;
    case 0x29:
      return kFree;
    case 0x34:
      return kDupObject;
    case 0x35:
      return kShare;
    case 0x41:
      return kIdleChannels;
    case 0x4a:
      return kVidHeapControl;
    case 0x4e:
      return kMapMemory;
    case 0x4f:
      return kUnmapMemory;
    case 0x52:
      return kGetEventData;
    case 0x54:
      return kAllocContextDma2;
    case 0x57:
      return kMapMemoryDma;
    case 0x58:
      return kUnmapMemoryDma;
    case 0x59:
      return kBindContextDma;
    case 0x5e:
      return kUpdateDeviceMappingInfo;
    case 0x5f:
      return kLocklessDiagnostic;
    case 201:
      return kRegisterFd;
    case 206:
      return kOsEvent;
    case 207:
      return kOsEvent;
    case 209:
      return kStatusCode;
    case 213:
      return kQueryDeviceIntr;
    case 214:
      return kSysParams;
    case 215:
      return kNumaInfo;
    case 216:
      return kSetNumaStatus;
    case 218:
      return kWaitOpenComplete;
    default:
      return {};
  }
}

std::span<const NvField> nv_uvm_layout(uint32_t cmd) {
  switch (cmd) {
    case 0x30000001:
      return kUvmInitialize;
    case 75:
      return kUvmMmInitialize;
    case 37:
      return kUvmRegisterGpu;
    case 38:
      return kUvmUuidOnly;  // UVM_UNREGISTER_GPU
    case 25:
      return kUvmRegisterGpuVaspace;
    case 26:
      return kUvmUuidOnly;  // UVM_UNREGISTER_GPU_VASPACE
    case 27:
      return kUvmRegisterChannel;
    case 28:
      return kUvmUnregisterChannel;
    case 29:
      return kUvmPeerAccess;
    case 30:
      return kUvmPeerAccess;
    case 23:
      return kUvmCreateRangeGroup;
    case 24:
      return kUvmDestroyRangeGroup;
    case 31:
      return kUvmSetRangeGroup;
    case 33:
      return kUvmMapExternalAllocation;
    case 34:
      return kUvmBaseLength;  // UVM_FREE
    case 39:
      return kUvmPageableMemAccess;
    case 42:
      return kUvmSetPreferredLocation;
    case 43:
      return kUvmRequestedBaseLength;  // UVM_UNSET_PREFERRED_LOCATION
    case 44:
      return kUvmRequestedBaseLength;  // UVM_ENABLE_READ_DUPLICATION
    case 45:
      return kUvmRequestedBaseLength;  // UVM_DISABLE_READ_DUPLICATION
    case 46:
      return kUvmAccessedBy;
    case 47:
      return kUvmAccessedBy;
    case 51:
      return kUvmMigrate;
    case 65:
      return kUvmBaseLengthUuid;  // UVM_MAP_DYNAMIC_PARALLELISM_REGION
    case 66:
      return kUvmBaseLengthUuid;  // UVM_UNMAP_EXTERNAL
    case 68:
      return kUvmBaseLength;  // UVM_ALLOC_SEMAPHORE_POOL
    case 70:
      return kUvmPageableMemAccessOnGpu;
    case 72:
      return kUvmBaseLength;  // UVM_VALIDATE_VA_RANGE
    case 73:
      return kUvmBaseLength;  // UVM_CREATE_EXTERNAL_RANGE
    default:
      return {};
  }
}

}  // namespace gdrproxy::proxy
