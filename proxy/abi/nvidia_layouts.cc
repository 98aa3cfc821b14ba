// The fields the decoder shows of each NVIDIA parameter struct (see nvidia_layouts.h), named by
// their members in nvos.h, nv-ioctl.h, nv-ioctl-numa.h, nv-unix-nvos-params-wrappers.h and
// uvm_ioctl.h; offsets come from each release's generated tables. The status field of each
// struct is not listed here (its offset is in the escape/UVM table).
#include "proxy/abi/nvidia_layouts.h"

namespace gdrproxy::proxy {
namespace {

using K = NvFieldKind;
using D = NvFieldDir;

// ---- Frontend escapes ----
constexpr NvFieldSpec kAllocMemory[] = {
    // nv_ioctl_nvos02_parameters_with_fd: NVOS02_PARAMETERS followed by the mmap fd.
    {"hRoot", K::kHandle, D::kIn, "params.hRoot"},
    {"hObjectParent", K::kHandle, D::kIn, "params.hObjectParent"},
    {"hObjectNew", K::kHandle, D::kIn, "params.hObjectNew"},
    {"hClass", K::kClass, D::kIn, "params.hClass"},
    {"flags", K::kHex32, D::kIn, "params.flags"},
    {"pMemory", K::kHex64, D::kInOut, "params.pMemory"},
    {"limit", K::kHex64, D::kInOut, "params.limit"},
    {"fd", K::kFd},
};
constexpr NvFieldSpec kAllocObject[] = {
    {"hRoot", K::kHandle},
    {"hObjectParent", K::kHandle},
    {"hObjectNew", K::kHandle},
    {"hClass", K::kClass},
};
constexpr NvFieldSpec kFree[] = {
    {"hRoot", K::kHandle},
    {"hObjectParent", K::kHandle},
    {"hObjectOld", K::kHandle},
};
constexpr NvFieldSpec kDupObject[] = {
    {"hClient", K::kHandle},    {"hParent", K::kHandle},    {"hObject", K::kHandle, D::kInOut},
    {"hClientSrc", K::kHandle}, {"hObjectSrc", K::kHandle}, {"flags", K::kHex32},
};
constexpr NvFieldSpec kShare[] = {
    // NVOS57: the RS_SHARE_POLICY {target, accessMask, type, action} sits at offset 8.
    {"hClient", K::kHandle},
    {"hObject", K::kHandle},
    {"target", K::kHex32, D::kIn, "sharePolicy.target"},
    {"accessMask", K::kHex32, D::kIn, "sharePolicy.accessMask"},
    {"type", K::kU16, D::kIn, "sharePolicy.type"},
    {"action", K::kU8, D::kIn, "sharePolicy.action"},
};
constexpr NvFieldSpec kIdleChannels[] = {
    {"hClient", K::kHandle},   {"hDevice", K::kHandle},  {"hChannel", K::kHandle},
    {"numChannels", K::kU32},  {"phClients", K::kHex64}, {"phDevices", K::kHex64},
    {"phChannels", K::kHex64}, {"flags", K::kHex32},     {"timeout", K::kU32},
};
constexpr NvFieldSpec kVidHeapControl[] = {
    {"hRoot", K::kHandle},    {"hObjectParent", K::kHandle}, {"function", K::kVidHeapFunction},
    {"hVASpace", K::kHandle}, {"total", K::kHex64, D::kOut}, {"free", K::kHex64, D::kOut},
};
constexpr NvFieldSpec kMapMemory[] = {
    // nv_ioctl_nvos33_parameters_with_fd: NVOS33_PARAMETERS followed by the mmap fd.
    {"hClient", K::kHandle, D::kIn, "params.hClient"},
    {"hDevice", K::kHandle, D::kIn, "params.hDevice"},
    {"hMemory", K::kHandle, D::kIn, "params.hMemory"},
    {"offset", K::kHex64, D::kIn, "params.offset"},
    {"length", K::kHex64, D::kIn, "params.length"},
    {"pLinearAddress", K::kHex64, D::kOut, "params.pLinearAddress"},
    {"flags", K::kHex32, D::kIn, "params.flags"},
    {"fd", K::kFd},
};
constexpr NvFieldSpec kUnmapMemory[] = {
    {"hClient", K::kHandle},       {"hDevice", K::kHandle}, {"hMemory", K::kHandle},
    {"pLinearAddress", K::kHex64}, {"flags", K::kHex32},
};
constexpr NvFieldSpec kGetEventData[] = {
    {"pEvent", K::kHex64},
    {"MoreEvents", K::kU32, D::kOut},
};
constexpr NvFieldSpec kAllocContextDma2[] = {
    {"hObjectParent", K::kHandle}, {"hSubDevice", K::kHandle}, {"hObjectNew", K::kHandle},
    {"hClass", K::kClass},         {"flags", K::kHex32},       {"selector", K::kU32},
    {"hMemory", K::kHandle},       {"offset", K::kHex64},      {"limit", K::kHex64},
};
constexpr NvFieldSpec kMapMemoryDma[] = {
    {"hClient", K::kHandle},     {"hDevice", K::kHandle},
    {"hDma", K::kHandle},        {"hMemory", K::kHandle},
    {"offset", K::kHex64},       {"length", K::kHex64},
    {"flags", K::kHex32},        {"flags2", K::kHex32},
    {"kindOverride", K::kHex32}, {"dmaOffset", K::kHex64, D::kInOut},
};
constexpr NvFieldSpec kUnmapMemoryDma[] = {
    {"hClient", K::kHandle}, {"hDevice", K::kHandle}, {"hDma", K::kHandle},
    {"hMemory", K::kHandle}, {"flags", K::kHex32},    {"dmaOffset", K::kHex64},
    {"size", K::kHex64},
};
constexpr NvFieldSpec kBindContextDma[] = {
    {"hClient", K::kHandle},
    {"hChannel", K::kHandle},
    {"hCtxDma", K::kHandle},
};
constexpr NvFieldSpec kUpdateDeviceMappingInfo[] = {
    {"hClient", K::kHandle},       {"hDevice", K::kHandle},       {"hMemory", K::kHandle},
    {"pOldCpuAddress", K::kHex64}, {"pNewCpuAddress", K::kHex64},
};
constexpr NvFieldSpec kLocklessDiagnostic[] = {{"cmd", K::kHex32}};
constexpr NvFieldSpec kRegisterFd[] = {{"ctl_fd", K::kFd}};
constexpr NvFieldSpec kOsEvent[] = {
    {"hClient", K::kHandle},
    {"hDevice", K::kHandle},
    {"fd", K::kFd},
};
constexpr NvFieldSpec kStatusCode[] = {
    {"domain", K::kHex32},
    {"bus", K::kU8},
    {"slot", K::kU8},
};
constexpr NvFieldSpec kQueryDeviceIntr[] = {{"intrStatus", K::kHex32, D::kOut}};
constexpr NvFieldSpec kSysParams[] = {{"memblock_size", K::kHex64}};
constexpr NvFieldSpec kNumaInfo[] = {
    {"nid", K::kI32, D::kOut},
    {"numa_status", K::kI32, D::kOut, "status"},
    {"memblock_size", K::kHex64, D::kOut},
    {"numa_mem_addr", K::kHex64, D::kOut},
    {"numa_mem_size", K::kHex64, D::kOut},
};
constexpr NvFieldSpec kSetNumaStatus[] = {{"numa_status", K::kI32, D::kIn, "status"}};
constexpr NvFieldSpec kWaitOpenComplete[] = {{"rc", K::kI32, D::kOut}};

// ---- UVM ----
constexpr NvFieldSpec kUvmInitialize[] = {{"flags", K::kHex64}};
constexpr NvFieldSpec kUvmMmInitialize[] = {{"uvmFd", K::kFd}};
constexpr NvFieldSpec kUvmRegisterGpu[] = {
    {"gpu_uuid", K::kUuid, D::kInOut}, {"rmCtrlFd", K::kFd},
    {"hClient", K::kHandle},           {"hSmcPartRef", K::kHandle},
    {"numaEnabled", K::kU8, D::kOut},  {"numaNodeId", K::kI32, D::kOut},
};
constexpr NvFieldSpec kUvmUuidOnly[] = {{"gpuUuid", K::kUuid}};
constexpr NvFieldSpec kUvmUnregisterGpu[] = {{"gpu_uuid", K::kUuid}};
constexpr NvFieldSpec kUvmRegisterGpuVaspace[] = {
    {"gpuUuid", K::kUuid},
    {"rmCtrlFd", K::kFd},
    {"hClient", K::kHandle},
    {"hVaSpace", K::kHandle},
};
constexpr NvFieldSpec kUvmRegisterChannel[] = {
    {"gpuUuid", K::kUuid},    {"rmCtrlFd", K::kFd}, {"hClient", K::kHandle},
    {"hChannel", K::kHandle}, {"base", K::kHex64},  {"length", K::kHex64},
};
constexpr NvFieldSpec kUvmUnregisterChannel[] = {
    {"gpuUuid", K::kUuid},
    {"hClient", K::kHandle},
    {"hChannel", K::kHandle},
};
constexpr NvFieldSpec kUvmPeerAccess[] = {{"gpuUuidA", K::kUuid}, {"gpuUuidB", K::kUuid}};
constexpr NvFieldSpec kUvmCreateRangeGroup[] = {{"rangeGroupId", K::kHex64, D::kOut}};
constexpr NvFieldSpec kUvmDestroyRangeGroup[] = {{"rangeGroupId", K::kHex64}};
constexpr NvFieldSpec kUvmSetRangeGroup[] = {
    {"rangeGroupId", K::kHex64},
    {"requestedBase", K::kHex64},
    {"length", K::kHex64},
};
constexpr NvFieldSpec kUvmMapExternalAllocation[] = {
    {"base", K::kHex64},     {"length", K::kHex64},
    {"offset", K::kHex64},   {"gpuAttributesCount", K::kU32},
    {"rmCtrlFd", K::kFd},    {"hClient", K::kHandle},
    {"hMemory", K::kHandle},
};
constexpr NvFieldSpec kUvmBaseLength[] = {{"base", K::kHex64}, {"length", K::kHex64}};
constexpr NvFieldSpec kUvmRequestedBaseLength[] = {
    {"requestedBase", K::kHex64},
    {"length", K::kHex64},
};
constexpr NvFieldSpec kUvmPageableMemAccess[] = {{"pageableMemAccess", K::kU8, D::kOut}};
constexpr NvFieldSpec kUvmSetPreferredLocation[] = {
    {"requestedBase", K::kHex64},
    {"length", K::kHex64},
    {"preferredLocation", K::kUuid},
    {"preferredCpuNumaNode", K::kI32},
};
constexpr NvFieldSpec kUvmAccessedBy[] = {
    {"requestedBase", K::kHex64},
    {"length", K::kHex64},
    {"accessedByUuid", K::kUuid},
};
constexpr NvFieldSpec kUvmMigrate[] = {
    {"base", K::kHex64},
    {"length", K::kHex64},
    {"destinationUuid", K::kUuid},
    {"flags", K::kHex32},
};
constexpr NvFieldSpec kUvmBaseLengthUuid[] = {
    {"base", K::kHex64},
    {"length", K::kHex64},
    {"gpuUuid", K::kUuid},
};
constexpr NvFieldSpec kUvmPageableMemAccessOnGpu[] = {
    {"gpu_uuid", K::kUuid},
    {"pageableMemAccess", K::kU8, D::kOut},
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

std::span<const NvFieldSpec> nv_escape_fields(std::string_view name) {
  static const struct {
    const char* call;
    std::span<const NvFieldSpec> fields;
  } kByName[] = {
      {"RM_ALLOC_MEMORY", kAllocMemory},
      {"RM_ALLOC_OBJECT", kAllocObject},
      {"RM_FREE", kFree},
      {"RM_DUP_OBJECT", kDupObject},
      {"RM_SHARE", kShare},
      {"RM_IDLE_CHANNELS", kIdleChannels},
      {"RM_VID_HEAP_CONTROL", kVidHeapControl},
      {"RM_MAP_MEMORY", kMapMemory},
      {"RM_UNMAP_MEMORY", kUnmapMemory},
      {"RM_GET_EVENT_DATA", kGetEventData},
      {"RM_ALLOC_CONTEXT_DMA2", kAllocContextDma2},
      {"RM_MAP_MEMORY_DMA", kMapMemoryDma},
      {"RM_UNMAP_MEMORY_DMA", kUnmapMemoryDma},
      {"RM_BIND_CONTEXT_DMA", kBindContextDma},
      {"RM_UPDATE_DEVICE_MAPPING_INFO", kUpdateDeviceMappingInfo},
      {"RM_LOCKLESS_DIAGNOSTIC", kLocklessDiagnostic},
      {"REGISTER_FD", kRegisterFd},
      {"ALLOC_OS_EVENT", kOsEvent},
      {"FREE_OS_EVENT", kOsEvent},
      {"STATUS_CODE", kStatusCode},
      {"QUERY_DEVICE_INTR", kQueryDeviceIntr},
      {"SYS_PARAMS", kSysParams},
      {"NUMA_INFO", kNumaInfo},
      {"SET_NUMA_STATUS", kSetNumaStatus},
      {"WAIT_OPEN_COMPLETE", kWaitOpenComplete},
  };
  for (const auto& e : kByName)
    if (name == e.call) return e.fields;
  return {};
}

std::span<const NvFieldSpec> nv_uvm_fields(std::string_view name) {
  static const struct {
    const char* call;
    std::span<const NvFieldSpec> fields;
  } kByName[] = {
      {"UVM_INITIALIZE", kUvmInitialize},
      {"UVM_MM_INITIALIZE", kUvmMmInitialize},
      {"UVM_REGISTER_GPU", kUvmRegisterGpu},
      {"UVM_UNREGISTER_GPU", kUvmUnregisterGpu},
      {"UVM_REGISTER_GPU_VASPACE", kUvmRegisterGpuVaspace},
      {"UVM_UNREGISTER_GPU_VASPACE", kUvmUuidOnly},
      {"UVM_REGISTER_CHANNEL", kUvmRegisterChannel},
      {"UVM_UNREGISTER_CHANNEL", kUvmUnregisterChannel},
      {"UVM_ENABLE_PEER_ACCESS", kUvmPeerAccess},
      {"UVM_DISABLE_PEER_ACCESS", kUvmPeerAccess},
      {"UVM_CREATE_RANGE_GROUP", kUvmCreateRangeGroup},
      {"UVM_DESTROY_RANGE_GROUP", kUvmDestroyRangeGroup},
      {"UVM_SET_RANGE_GROUP", kUvmSetRangeGroup},
      {"UVM_MAP_EXTERNAL_ALLOCATION", kUvmMapExternalAllocation},
      {"UVM_FREE", kUvmBaseLength},
      {"UVM_PAGEABLE_MEM_ACCESS", kUvmPageableMemAccess},
      {"UVM_SET_PREFERRED_LOCATION", kUvmSetPreferredLocation},
      {"UVM_UNSET_PREFERRED_LOCATION", kUvmRequestedBaseLength},
      {"UVM_ENABLE_READ_DUPLICATION", kUvmRequestedBaseLength},
      {"UVM_DISABLE_READ_DUPLICATION", kUvmRequestedBaseLength},
      {"UVM_SET_ACCESSED_BY", kUvmAccessedBy},
      {"UVM_UNSET_ACCESSED_BY", kUvmAccessedBy},
      {"UVM_MIGRATE", kUvmMigrate},
      {"UVM_MAP_DYNAMIC_PARALLELISM_REGION", kUvmBaseLengthUuid},
      {"UVM_UNMAP_EXTERNAL", kUvmBaseLengthUuid},
      {"UVM_ALLOC_SEMAPHORE_POOL", kUvmBaseLength},
      {"UVM_PAGEABLE_MEM_ACCESS_ON_GPU", kUvmPageableMemAccessOnGpu},
      {"UVM_VALIDATE_VA_RANGE", kUvmBaseLength},
      {"UVM_CREATE_EXTERNAL_RANGE", kUvmBaseLength},
  };
  for (const auto& e : kByName)
    if (name == e.call) return e.fields;
  return {};
}

}  // namespace gdrproxy::proxy
