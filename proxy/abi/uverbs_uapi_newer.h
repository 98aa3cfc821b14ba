// Core uverbs ids newer than the build host's kernel headers (Debian 12's linux-libc-dev, 6.1):
// objects, methods and attributes kernels up to 6.18 added, as rdma-core v64 vendors them
// (kernel-headers/rdma/ib_user_ioctl_cmds.h, ib_user_ioctl_verbs.h). Each value is the
// constant's position in its enum there. The one idea: these are the kernel's numbers, written
// here only because the build host's headers are older; they never change once released.
#pragma once

#include <cstdint>

namespace gdrproxy::proxy::uverbs::newer {

// enum uverbs_default_objects
inline constexpr uint16_t kObjectDmah = 17;    // UVERBS_OBJECT_DMAH (DMA handles, 6.17)
inline constexpr uint16_t kObjectDmabuf = 18;  // UVERBS_OBJECT_DMABUF (6.18)

// enum uverbs_methods_device, enum uverbs_attrs_query_port_speed_cmd_attr_ids
inline constexpr uint16_t kMethodQueryPortSpeed = 7;  // UVERBS_METHOD_QUERY_PORT_SPEED
inline constexpr uint16_t kAttrQueryPortSpeedPortNum = 0;
inline constexpr uint16_t kAttrQueryPortSpeedResp = 1;
// enum uverbs_attrs_get_context_attr_ids: an array of capability fds (/dev/infiniband/ucapN)
inline constexpr uint16_t kAttrGetContextFdArr = 2;  // UVERBS_ATTR_GET_CONTEXT_FD_ARR

// enum uverbs_attrs_create_cq_cmd_attr_ids: a CQ buffer given by the caller
inline constexpr uint16_t kAttrCreateCqBufferVa = 8;
inline constexpr uint16_t kAttrCreateCqBufferLength = 9;
inline constexpr uint16_t kAttrCreateCqBufferFd = 10;  // a dma-buf
inline constexpr uint16_t kAttrCreateCqBufferOffset = 11;
inline constexpr uint16_t kAttrCreateCqBufUmem = 12;  // struct ib_uverbs_buffer_desc

// enum uverbs_attrs_create_qp_cmd_attr_ids: buffers as struct ib_uverbs_buffer_desc
inline constexpr uint16_t kAttrCreateQpBufUmem = 15;
inline constexpr uint16_t kAttrCreateQpSqBufUmem = 16;
inline constexpr uint16_t kAttrCreateQpRqBufUmem = 17;

// enum uverbs_methods_mr, enum uverbs_attrs_reg_mr_cmd_attr_ids
inline constexpr uint16_t kMethodRegMr = 5;  // UVERBS_METHOD_REG_MR
inline constexpr uint16_t kAttrRegMrHandle = 0;
inline constexpr uint16_t kAttrRegMrPdHandle = 1;
inline constexpr uint16_t kAttrRegMrDmaHandle = 2;
inline constexpr uint16_t kAttrRegMrIova = 3;
inline constexpr uint16_t kAttrRegMrAddr = 4;
inline constexpr uint16_t kAttrRegMrLength = 5;
inline constexpr uint16_t kAttrRegMrAccessFlags = 6;
inline constexpr uint16_t kAttrRegMrFd = 7;  // a dma-buf
inline constexpr uint16_t kAttrRegMrFdOffset = 8;
inline constexpr uint16_t kAttrRegMrRespLkey = 9;
inline constexpr uint16_t kAttrRegMrRespRkey = 10;

// enum uverbs_methods_dmah, enum uverbs_attrs_alloc_dmah_cmd_attr_ids, ..._free_dmah_...
inline constexpr uint16_t kMethodDmahAlloc = 0;
inline constexpr uint16_t kMethodDmahFree = 1;
inline constexpr uint16_t kAttrAllocDmahHandle = 0;
inline constexpr uint16_t kAttrAllocDmahCpuId = 1;
inline constexpr uint16_t kAttrAllocDmahTphMemType = 2;
inline constexpr uint16_t kAttrAllocDmahPh = 3;
inline constexpr uint16_t kAttrFreeDmaHandle = 0;

// enum uverbs_methods_dmabuf, enum uverbs_attrs_alloc_dmabuf_cmd_attr_ids
inline constexpr uint16_t kMethodDmabufAlloc = 0;
inline constexpr uint16_t kAttrAllocDmabufHandle = 0;  // the new dma-buf fd
inline constexpr uint16_t kAttrAllocDmabufPgoff = 1;

// struct ib_uverbs_buffer_desc { u32 type; s32 fd; u32 flags; u32 optional_flags; u64 addr;
// u64 length; } and enum ib_uverbs_buffer_type
inline constexpr uint32_t kBufferDescSize = 32;
inline constexpr uint32_t kBufferDescFdOffset = 4;
inline constexpr uint32_t kBufferTypeDmabuf = 0;

}  // namespace gdrproxy::proxy::uverbs::newer
