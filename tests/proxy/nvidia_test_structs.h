// The NVIDIA parameter structs as the driver's headers lay them out on x86-64, written out again
// for the tests so that test buffers do not come from the decoder's own offset constants: a
// wrong offset in the decoder then shows up as a failing test instead of agreeing with itself.
// Each struct is checked against the driver's sizeof by static_assert.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace gdrproxy::proxy::testing {

// _IOC(_IOC_READ|_IOC_WRITE, 'F', nr, size), as libcuda issues every escape.
inline uint32_t nv_iowr(uint8_t nr, uint32_t size) {
  return (3u << 30) | ((size & 0x3fff) << 16) | (0x46u << 8) | nr;
}

struct Nvos21 {  // NVOS21_PARAMETERS
  uint32_t hRoot, hObjectParent, hObjectNew, hClass;
  uint64_t pAllocParms;
  uint32_t paramsSize, status;
};
static_assert(sizeof(Nvos21) == 32);

struct Nvos64 {  // NVOS64_PARAMETERS
  uint32_t hRoot, hObjectParent, hObjectNew, hClass;
  uint64_t pAllocParms, pRightsRequested;
  uint32_t paramsSize, flags, status, pad;
};
static_assert(sizeof(Nvos64) == 48);

struct Nvos54 {  // NVOS54_PARAMETERS
  uint32_t hClient, hObject, cmd, flags;
  uint64_t params;
  uint32_t paramsSize, status;
};
static_assert(sizeof(Nvos54) == 32);

struct Nvos00 {  // NVOS00_PARAMETERS
  uint32_t hRoot, hObjectParent, hObjectOld, status;
};
static_assert(sizeof(Nvos00) == 16);

struct Nvos33WithFd {  // nv_ioctl_nvos33_parameters_with_fd
  uint32_t hClient, hDevice, hMemory, pad0;
  uint64_t offset, length, pLinearAddress;
  uint32_t status, flags;
  int32_t fd;
  uint32_t pad1;
};
static_assert(sizeof(Nvos33WithFd) == 56);

struct CardInfo {  // nv_ioctl_card_info_t
  uint8_t valid, pad0[3];
  uint32_t domain;
  uint8_t bus, slot, function, pad1;
  uint16_t vendor_id, device_id;
  uint32_t gpu_id;
  uint16_t interrupt_line, pad2;
  uint64_t reg_address, reg_size, fb_address, fb_size;
  uint32_t minor_number;
  uint8_t dev_name[10], pad3[2];
};
static_assert(sizeof(CardInfo) == 72);

struct RmApiVersion {  // nv_ioctl_rm_api_version_t
  uint32_t cmd, reply;
  char versionString[64];
};
static_assert(sizeof(RmApiVersion) == 72);

struct Xfer {  // nv_ioctl_xfer_t
  uint32_t cmd, size;
  uint64_t ptr;
};
static_assert(sizeof(Xfer) == 16);

struct ExportDmabuf {  // nv_ioctl_export_to_dma_buf_fd_t
  int32_t fd;
  uint32_t hClient, totalObjects, numObjects, index, pad0;
  uint64_t totalSize;
  uint8_t mappingType, bAllowMmap, pad1[2];
  uint32_t handles[128];
  uint32_t pad2;
  uint64_t offsets[128], sizes[128];
  uint32_t status, pad3;
};
static_assert(sizeof(ExportDmabuf) == 2608);
static_assert(offsetof(ExportDmabuf, handles) == 36 && offsetof(ExportDmabuf, offsets) == 552 &&
              offsetof(ExportDmabuf, status) == 2600);

struct UvmRegisterGpu {  // UVM_REGISTER_GPU_PARAMS
  uint8_t gpu_uuid[16];
  uint8_t numaEnabled, pad0[3];
  int32_t numaNodeId, rmCtrlFd;
  uint32_t hClient, hSmcPartRef, rmStatus;
};
static_assert(sizeof(UvmRegisterGpu) == 40);

struct UvmInitialize {  // UVM_INITIALIZE_PARAMS
  uint64_t flags;
  uint32_t rmStatus, pad;
};
static_assert(sizeof(UvmInitialize) == 16);

template <typename T>
std::vector<uint8_t> bytes_of(const T& v) {
  std::vector<uint8_t> b(sizeof(T));
  std::memcpy(b.data(), &v, sizeof(T));
  return b;
}

}  // namespace gdrproxy::proxy::testing
