// Tables of the uverbs ABI. Every number is an enum constant from rdma-core's uapi headers; the
// names and kinds are ours. Keep entries grouped by object in header order.
#include "proxy/abi/uverbs_abi.h"

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include "base/hex.h"
#include "base/hot_path.h"
#include "proxy/abi/uverbs_uapi_newer.h"

namespace gdrproxy::proxy::uverbs {
namespace {

using K = AttrKind;
namespace nw = newer;

constexpr ObjectSpec kObjects[] = {
    {UVERBS_OBJECT_DEVICE, "DEVICE"},
    {UVERBS_OBJECT_PD, "PD"},
    {UVERBS_OBJECT_COMP_CHANNEL, "COMP_CHANNEL"},
    {UVERBS_OBJECT_CQ, "CQ"},
    {UVERBS_OBJECT_QP, "QP"},
    {UVERBS_OBJECT_SRQ, "SRQ"},
    {UVERBS_OBJECT_AH, "AH"},
    {UVERBS_OBJECT_MR, "MR"},
    {UVERBS_OBJECT_MW, "MW"},
    {UVERBS_OBJECT_FLOW, "FLOW"},
    {UVERBS_OBJECT_XRCD, "XRCD"},
    {UVERBS_OBJECT_RWQ_IND_TBL, "RWQ_IND_TBL"},
    {UVERBS_OBJECT_WQ, "WQ"},
    {UVERBS_OBJECT_FLOW_ACTION, "FLOW_ACTION"},
    {UVERBS_OBJECT_DM, "DM"},
    {UVERBS_OBJECT_COUNTERS, "COUNTERS"},
    {UVERBS_OBJECT_ASYNC_EVENT, "ASYNC_EVENT"},
    {nw::kObjectDmah, "DMAH"},
    {nw::kObjectDmabuf, "DMABUF"},
};

constexpr AttrSpec kCommonAttrs[] = {
    {UVERBS_ATTR_UHW_IN, "driver_in", K::kPtrIn},
    {UVERBS_ATTR_UHW_OUT, "driver_out", K::kPtrOut},
};

// DEVICE
constexpr AttrSpec kInvokeWrite[] = {
    {UVERBS_ATTR_CORE_IN, "core_in", K::kPtrIn},
    {UVERBS_ATTR_CORE_OUT, "core_out", K::kPtrOut},
    {UVERBS_ATTR_WRITE_CMD, "write_cmd", K::kWriteCmd},
};
constexpr AttrSpec kInfoHandles[] = {
    {UVERBS_ATTR_INFO_OBJECT_ID, "object_id", K::kU16In},
    {UVERBS_ATTR_INFO_TOTAL_HANDLES, "total", K::kU32Out},
    {UVERBS_ATTR_INFO_HANDLES_LIST, "handles", K::kPtrOut},
};
constexpr AttrSpec kQueryPort[] = {
    {UVERBS_ATTR_QUERY_PORT_PORT_NUM, "port", K::kU8In},
    {UVERBS_ATTR_QUERY_PORT_RESP, "resp", K::kPtrOut},
};
constexpr AttrSpec kGetContext[] = {
    {UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, "num_comp_vectors", K::kU32Out},
    {UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT, "core_support", K::kU64Out},
    {nw::kAttrGetContextFdArr, "capability_fds", K::kFdArray},
};
constexpr AttrSpec kQueryPortSpeed[] = {
    {nw::kAttrQueryPortSpeedPortNum, "port", K::kU32In},
    {nw::kAttrQueryPortSpeedResp, "speed", K::kU64Out},
};
constexpr AttrSpec kQueryContext[] = {
    {UVERBS_ATTR_QUERY_CONTEXT_NUM_COMP_VECTORS, "num_comp_vectors", K::kU32Out},
    {UVERBS_ATTR_QUERY_CONTEXT_CORE_SUPPORT, "core_support", K::kU64Out},
};
constexpr AttrSpec kQueryGidTable[] = {
    {UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, "entry_size", K::kU64In},
    {UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, "flags", K::kU32In},
    {UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, "entries", K::kPtrOut},
    {UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, "num_entries", K::kU64Out},
};
constexpr AttrSpec kQueryGidEntry[] = {
    {UVERBS_ATTR_QUERY_GID_ENTRY_PORT, "port", K::kU32In},
    {UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, "gid_index", K::kU32In},
    {UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, "flags", K::kU32In},
    {UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, "entry", K::kPtrOut},
};
// PD / MW / XRCD / AH / RWQ_IND_TBL / FLOW: destroy only through ioctl.
constexpr AttrSpec kPdDestroy[] = {{UVERBS_ATTR_DESTROY_PD_HANDLE, "pd", K::kIdrDestroy}};
constexpr AttrSpec kMwDestroy[] = {{UVERBS_ATTR_DESTROY_MW_HANDLE, "mw", K::kIdrDestroy}};
constexpr AttrSpec kXrcdDestroy[] = {{UVERBS_ATTR_DESTROY_XRCD_HANDLE, "xrcd", K::kIdrDestroy}};
constexpr AttrSpec kAhDestroy[] = {{UVERBS_ATTR_DESTROY_AH_HANDLE, "ah", K::kIdrDestroy}};
constexpr AttrSpec kRwqDestroy[] = {
    {UVERBS_ATTR_DESTROY_RWQ_IND_TBL_HANDLE, "rwq_ind_tbl", K::kIdrDestroy}};
constexpr AttrSpec kFlowDestroy[] = {{UVERBS_ATTR_DESTROY_FLOW_HANDLE, "flow", K::kIdrDestroy}};
// CQ
constexpr AttrSpec kCqCreate[] = {
    {UVERBS_ATTR_CREATE_CQ_HANDLE, "cq", K::kIdrNew},
    {UVERBS_ATTR_CREATE_CQ_CQE, "cqe", K::kU32In},
    {UVERBS_ATTR_CREATE_CQ_USER_HANDLE, "user_handle", K::kU64In},
    {UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL, "comp_channel", K::kFdIn},
    {UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, "comp_vector", K::kU32In},
    {UVERBS_ATTR_CREATE_CQ_FLAGS, "flags", K::kU32In},
    {UVERBS_ATTR_CREATE_CQ_RESP_CQE, "resp_cqe", K::kU32Out},
    {UVERBS_ATTR_CREATE_CQ_EVENT_FD, "async_fd", K::kFdIn},
    {nw::kAttrCreateCqBufferVa, "buffer_va", K::kU64In},
    {nw::kAttrCreateCqBufferLength, "buffer_length", K::kU64In},
    {nw::kAttrCreateCqBufferFd, "buffer_fd", K::kRawFd},
    {nw::kAttrCreateCqBufferOffset, "buffer_offset", K::kU64In},
    {nw::kAttrCreateCqBufUmem, "buf_umem", K::kBufferDesc},
};
constexpr AttrSpec kCqDestroy[] = {
    {UVERBS_ATTR_DESTROY_CQ_HANDLE, "cq", K::kIdrDestroy},
    {UVERBS_ATTR_DESTROY_CQ_RESP, "resp", K::kPtrOut},
};
// QP
constexpr AttrSpec kQpCreate[] = {
    {UVERBS_ATTR_CREATE_QP_HANDLE, "qp", K::kIdrNew},
    {UVERBS_ATTR_CREATE_QP_XRCD_HANDLE, "xrcd", K::kIdrIn},
    {UVERBS_ATTR_CREATE_QP_PD_HANDLE, "pd", K::kIdrIn},
    {UVERBS_ATTR_CREATE_QP_SRQ_HANDLE, "srq", K::kIdrIn},
    {UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE, "send_cq", K::kIdrIn},
    {UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE, "recv_cq", K::kIdrIn},
    {UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE, "ind_table", K::kIdrIn},
    {UVERBS_ATTR_CREATE_QP_USER_HANDLE, "user_handle", K::kU64In},
    {UVERBS_ATTR_CREATE_QP_CAP, "cap", K::kPtrIn},
    {UVERBS_ATTR_CREATE_QP_TYPE, "qp_type", K::kU8In},
    {UVERBS_ATTR_CREATE_QP_FLAGS, "flags", K::kU32In},
    {UVERBS_ATTR_CREATE_QP_SOURCE_QPN, "source_qpn", K::kU32In},
    {UVERBS_ATTR_CREATE_QP_EVENT_FD, "async_fd", K::kFdIn},
    {UVERBS_ATTR_CREATE_QP_RESP_CAP, "resp_cap", K::kPtrOut},
    {UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, "qp_num", K::kU32Out},
    {nw::kAttrCreateQpBufUmem, "buf_umem", K::kBufferDesc},
    {nw::kAttrCreateQpSqBufUmem, "sq_buf_umem", K::kBufferDesc},
    {nw::kAttrCreateQpRqBufUmem, "rq_buf_umem", K::kBufferDesc},
};
constexpr AttrSpec kQpDestroy[] = {
    {UVERBS_ATTR_DESTROY_QP_HANDLE, "qp", K::kIdrDestroy},
    {UVERBS_ATTR_DESTROY_QP_RESP, "resp", K::kPtrOut},
};
// SRQ
constexpr AttrSpec kSrqCreate[] = {
    {UVERBS_ATTR_CREATE_SRQ_HANDLE, "srq", K::kIdrNew},
    {UVERBS_ATTR_CREATE_SRQ_PD_HANDLE, "pd", K::kIdrIn},
    {UVERBS_ATTR_CREATE_SRQ_XRCD_HANDLE, "xrcd", K::kIdrIn},
    {UVERBS_ATTR_CREATE_SRQ_CQ_HANDLE, "cq", K::kIdrIn},
    {UVERBS_ATTR_CREATE_SRQ_USER_HANDLE, "user_handle", K::kU64In},
    {UVERBS_ATTR_CREATE_SRQ_MAX_WR, "max_wr", K::kU32In},
    {UVERBS_ATTR_CREATE_SRQ_MAX_SGE, "max_sge", K::kU32In},
    {UVERBS_ATTR_CREATE_SRQ_LIMIT, "limit", K::kU32In},
    {UVERBS_ATTR_CREATE_SRQ_MAX_NUM_TAGS, "max_num_tags", K::kU32In},
    {UVERBS_ATTR_CREATE_SRQ_TYPE, "srq_type", K::kU32In},
    {UVERBS_ATTR_CREATE_SRQ_EVENT_FD, "async_fd", K::kFdIn},
    {UVERBS_ATTR_CREATE_SRQ_RESP_MAX_WR, "resp_max_wr", K::kU32Out},
    {UVERBS_ATTR_CREATE_SRQ_RESP_MAX_SGE, "resp_max_sge", K::kU32Out},
    {UVERBS_ATTR_CREATE_SRQ_RESP_SRQ_NUM, "srq_num", K::kU32Out},
};
constexpr AttrSpec kSrqDestroy[] = {
    {UVERBS_ATTR_DESTROY_SRQ_HANDLE, "srq", K::kIdrDestroy},
    {UVERBS_ATTR_DESTROY_SRQ_RESP, "resp", K::kPtrOut},
};
// WQ
constexpr AttrSpec kWqCreate[] = {
    {UVERBS_ATTR_CREATE_WQ_HANDLE, "wq", K::kIdrNew},
    {UVERBS_ATTR_CREATE_WQ_PD_HANDLE, "pd", K::kIdrIn},
    {UVERBS_ATTR_CREATE_WQ_CQ_HANDLE, "cq", K::kIdrIn},
    {UVERBS_ATTR_CREATE_WQ_USER_HANDLE, "user_handle", K::kU64In},
    {UVERBS_ATTR_CREATE_WQ_TYPE, "wq_type", K::kU32In},
    {UVERBS_ATTR_CREATE_WQ_EVENT_FD, "async_fd", K::kFdIn},
    {UVERBS_ATTR_CREATE_WQ_MAX_WR, "max_wr", K::kU32In},
    {UVERBS_ATTR_CREATE_WQ_MAX_SGE, "max_sge", K::kU32In},
    {UVERBS_ATTR_CREATE_WQ_FLAGS, "flags", K::kU64In},
    {UVERBS_ATTR_CREATE_WQ_RESP_MAX_WR, "resp_max_wr", K::kU32Out},
    {UVERBS_ATTR_CREATE_WQ_RESP_MAX_SGE, "resp_max_sge", K::kU32Out},
    {UVERBS_ATTR_CREATE_WQ_RESP_WQ_NUM, "wq_num", K::kU32Out},
};
constexpr AttrSpec kWqDestroy[] = {
    {UVERBS_ATTR_DESTROY_WQ_HANDLE, "wq", K::kIdrDestroy},
    {UVERBS_ATTR_DESTROY_WQ_RESP, "resp", K::kPtrOut},
};
// FLOW_ACTION
constexpr AttrSpec kFlowActionEspCreate[] = {
    {UVERBS_ATTR_CREATE_FLOW_ACTION_ESP_HANDLE, "flow_action", K::kIdrNew},
    {UVERBS_ATTR_FLOW_ACTION_ESP_ATTRS, "attrs", K::kPtrIn},
    {UVERBS_ATTR_FLOW_ACTION_ESP_ESN, "esn", K::kPtrIn},
    {UVERBS_ATTR_FLOW_ACTION_ESP_KEYMAT, "keymat", K::kEnumIn},
    {UVERBS_ATTR_FLOW_ACTION_ESP_REPLAY, "replay", K::kEnumIn},
    {UVERBS_ATTR_FLOW_ACTION_ESP_ENCAP, "encap", K::kPtrIn},
};
constexpr AttrSpec kFlowActionEspModify[] = {
    {UVERBS_ATTR_MODIFY_FLOW_ACTION_ESP_HANDLE, "flow_action", K::kIdrIn},
    {UVERBS_ATTR_FLOW_ACTION_ESP_ATTRS, "attrs", K::kPtrIn},
    {UVERBS_ATTR_FLOW_ACTION_ESP_ESN, "esn", K::kPtrIn},
    {UVERBS_ATTR_FLOW_ACTION_ESP_KEYMAT, "keymat", K::kEnumIn},
    {UVERBS_ATTR_FLOW_ACTION_ESP_REPLAY, "replay", K::kEnumIn},
    {UVERBS_ATTR_FLOW_ACTION_ESP_ENCAP, "encap", K::kPtrIn},
};
constexpr AttrSpec kFlowActionDestroy[] = {
    {UVERBS_ATTR_DESTROY_FLOW_ACTION_HANDLE, "flow_action", K::kIdrDestroy}};
// DM
constexpr AttrSpec kDmAlloc[] = {
    {UVERBS_ATTR_ALLOC_DM_HANDLE, "dm", K::kIdrNew},
    {UVERBS_ATTR_ALLOC_DM_LENGTH, "length", K::kU64In},
    {UVERBS_ATTR_ALLOC_DM_ALIGNMENT, "alignment", K::kU32In},
};
constexpr AttrSpec kDmFree[] = {{UVERBS_ATTR_FREE_DM_HANDLE, "dm", K::kIdrDestroy}};
// MR
constexpr AttrSpec kDmMrReg[] = {
    {UVERBS_ATTR_REG_DM_MR_HANDLE, "mr", K::kIdrNew},
    {UVERBS_ATTR_REG_DM_MR_OFFSET, "offset", K::kU64In},
    {UVERBS_ATTR_REG_DM_MR_LENGTH, "length", K::kU64In},
    {UVERBS_ATTR_REG_DM_MR_PD_HANDLE, "pd", K::kIdrIn},
    {UVERBS_ATTR_REG_DM_MR_ACCESS_FLAGS, "access", K::kAccessFlags},
    {UVERBS_ATTR_REG_DM_MR_DM_HANDLE, "dm", K::kIdrIn},
    {UVERBS_ATTR_REG_DM_MR_RESP_LKEY, "lkey", K::kU32Out},
    {UVERBS_ATTR_REG_DM_MR_RESP_RKEY, "rkey", K::kU32Out},
};
constexpr AttrSpec kMrDestroy[] = {{UVERBS_ATTR_DESTROY_MR_HANDLE, "mr", K::kIdrDestroy}};
constexpr AttrSpec kAdviseMr[] = {
    {UVERBS_ATTR_ADVISE_MR_PD_HANDLE, "pd", K::kIdrIn},
    {UVERBS_ATTR_ADVISE_MR_ADVICE, "advice", K::kU32In},
    {UVERBS_ATTR_ADVISE_MR_FLAGS, "flags", K::kU32In},
    {UVERBS_ATTR_ADVISE_MR_SGE_LIST, "sge_list", K::kPtrIn},
};
constexpr AttrSpec kQueryMr[] = {
    {UVERBS_ATTR_QUERY_MR_HANDLE, "mr", K::kIdrIn},
    {UVERBS_ATTR_QUERY_MR_RESP_LKEY, "lkey", K::kU32Out},
    {UVERBS_ATTR_QUERY_MR_RESP_RKEY, "rkey", K::kU32Out},
    {UVERBS_ATTR_QUERY_MR_RESP_LENGTH, "length", K::kU64Out},
    {UVERBS_ATTR_QUERY_MR_RESP_IOVA, "iova", K::kU64Out},
};
constexpr AttrSpec kRegDmabufMr[] = {
    {UVERBS_ATTR_REG_DMABUF_MR_HANDLE, "mr", K::kIdrNew},
    {UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE, "pd", K::kIdrIn},
    {UVERBS_ATTR_REG_DMABUF_MR_OFFSET, "offset", K::kU64In},
    {UVERBS_ATTR_REG_DMABUF_MR_LENGTH, "length", K::kU64In},
    {UVERBS_ATTR_REG_DMABUF_MR_IOVA, "iova", K::kU64In},
    {UVERBS_ATTR_REG_DMABUF_MR_FD, "fd", K::kRawFd},
    {UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS, "access", K::kAccessFlags},
    {UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY, "lkey", K::kU32Out},
    {UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY, "rkey", K::kU32Out},
};
constexpr AttrSpec kRegMr[] = {
    {nw::kAttrRegMrHandle, "mr", K::kIdrNew},
    {nw::kAttrRegMrPdHandle, "pd", K::kIdrIn},
    {nw::kAttrRegMrDmaHandle, "dmah", K::kIdrIn},
    {nw::kAttrRegMrIova, "iova", K::kU64In},
    {nw::kAttrRegMrAddr, "addr", K::kU64In},
    {nw::kAttrRegMrLength, "length", K::kU64In},
    {nw::kAttrRegMrAccessFlags, "access", K::kAccessFlags},
    {nw::kAttrRegMrFd, "fd", K::kRawFd},
    {nw::kAttrRegMrFdOffset, "fd_offset", K::kU64In},
    {nw::kAttrRegMrRespLkey, "lkey", K::kU32Out},
    {nw::kAttrRegMrRespRkey, "rkey", K::kU32Out},
};
// DMAH (DMA handles: a CPU and TPH steering hint for the memory an MR then names)
constexpr AttrSpec kDmahAlloc[] = {
    {nw::kAttrAllocDmahHandle, "dmah", K::kIdrNew},
    {nw::kAttrAllocDmahCpuId, "cpu_id", K::kU32In},
    {nw::kAttrAllocDmahTphMemType, "tph_mem_type", K::kEnumIn},
    {nw::kAttrAllocDmahPh, "ph", K::kU8In},
};
constexpr AttrSpec kDmahFree[] = {
    {nw::kAttrFreeDmaHandle, "dmah", K::kIdrDestroy},
};
// DMABUF (a dma-buf exported from the device's own pages, for mmap)
constexpr AttrSpec kDmabufAlloc[] = {
    {nw::kAttrAllocDmabufHandle, "dmabuf", K::kFdNew},
    {nw::kAttrAllocDmabufPgoff, "pgoff", K::kU64In},
};
// COUNTERS
constexpr AttrSpec kCountersCreate[] = {
    {UVERBS_ATTR_CREATE_COUNTERS_HANDLE, "counters", K::kIdrNew}};
constexpr AttrSpec kCountersDestroy[] = {
    {UVERBS_ATTR_DESTROY_COUNTERS_HANDLE, "counters", K::kIdrDestroy}};
constexpr AttrSpec kCountersRead[] = {
    {UVERBS_ATTR_READ_COUNTERS_HANDLE, "counters", K::kIdrIn},
    {UVERBS_ATTR_READ_COUNTERS_BUFF, "buff", K::kPtrOut},
    {UVERBS_ATTR_READ_COUNTERS_FLAGS, "flags", K::kU32In},
};
// ASYNC_EVENT
constexpr AttrSpec kAsyncEventAlloc[] = {
    {UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE, "async_fd", K::kFdNew}};

constexpr MethodSpec kMethods[] = {
    {UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE, "INVOKE_WRITE", kInvokeWrite},
    {UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INFO_HANDLES, "INFO_HANDLES", kInfoHandles},
    {UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_PORT, "QUERY_PORT", kQueryPort},
    {UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT, "GET_CONTEXT", kGetContext},
    {UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT, "QUERY_CONTEXT", kQueryContext},
    {UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_GID_TABLE, "QUERY_GID_TABLE", kQueryGidTable},
    {UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_GID_ENTRY, "QUERY_GID_ENTRY", kQueryGidEntry},
    {UVERBS_OBJECT_DEVICE, nw::kMethodQueryPortSpeed, "QUERY_PORT_SPEED", kQueryPortSpeed},
    {UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY, "DESTROY_PD", kPdDestroy},
    {UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE, "CREATE_CQ", kCqCreate},
    {UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_DESTROY, "DESTROY_CQ", kCqDestroy},
    {UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE, "CREATE_QP", kQpCreate},
    {UVERBS_OBJECT_QP, UVERBS_METHOD_QP_DESTROY, "DESTROY_QP", kQpDestroy},
    {UVERBS_OBJECT_SRQ, UVERBS_METHOD_SRQ_CREATE, "CREATE_SRQ", kSrqCreate},
    {UVERBS_OBJECT_SRQ, UVERBS_METHOD_SRQ_DESTROY, "DESTROY_SRQ", kSrqDestroy},
    {UVERBS_OBJECT_AH, UVERBS_METHOD_AH_DESTROY, "DESTROY_AH", kAhDestroy},
    {UVERBS_OBJECT_MR, UVERBS_METHOD_DM_MR_REG, "REG_DM_MR", kDmMrReg},
    {UVERBS_OBJECT_MR, UVERBS_METHOD_MR_DESTROY, "DESTROY_MR", kMrDestroy},
    {UVERBS_OBJECT_MR, UVERBS_METHOD_ADVISE_MR, "ADVISE_MR", kAdviseMr},
    {UVERBS_OBJECT_MR, UVERBS_METHOD_QUERY_MR, "QUERY_MR", kQueryMr},
    {UVERBS_OBJECT_MR, UVERBS_METHOD_REG_DMABUF_MR, "REG_DMABUF_MR", kRegDmabufMr},
    {UVERBS_OBJECT_MR, nw::kMethodRegMr, "REG_MR", kRegMr},
    {UVERBS_OBJECT_MW, UVERBS_METHOD_MW_DESTROY, "DESTROY_MW", kMwDestroy},
    {UVERBS_OBJECT_FLOW, UVERBS_METHOD_FLOW_DESTROY, "DESTROY_FLOW", kFlowDestroy},
    {UVERBS_OBJECT_XRCD, UVERBS_METHOD_XRCD_DESTROY, "DESTROY_XRCD", kXrcdDestroy},
    {UVERBS_OBJECT_RWQ_IND_TBL, UVERBS_METHOD_RWQ_IND_TBL_DESTROY, "DESTROY_RWQ_IND_TBL",
     kRwqDestroy},
    {UVERBS_OBJECT_WQ, UVERBS_METHOD_WQ_CREATE, "CREATE_WQ", kWqCreate},
    {UVERBS_OBJECT_WQ, UVERBS_METHOD_WQ_DESTROY, "DESTROY_WQ", kWqDestroy},
    {UVERBS_OBJECT_FLOW_ACTION, UVERBS_METHOD_FLOW_ACTION_ESP_CREATE, "CREATE_ESP",
     kFlowActionEspCreate},
    {UVERBS_OBJECT_FLOW_ACTION, UVERBS_METHOD_FLOW_ACTION_DESTROY, "DESTROY", kFlowActionDestroy},
    {UVERBS_OBJECT_FLOW_ACTION, UVERBS_METHOD_FLOW_ACTION_ESP_MODIFY, "MODIFY_ESP",
     kFlowActionEspModify},
    {UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC, "ALLOC_DM", kDmAlloc},
    {UVERBS_OBJECT_DM, UVERBS_METHOD_DM_FREE, "FREE_DM", kDmFree},
    {UVERBS_OBJECT_COUNTERS, UVERBS_METHOD_COUNTERS_CREATE, "CREATE_COUNTERS", kCountersCreate},
    {UVERBS_OBJECT_COUNTERS, UVERBS_METHOD_COUNTERS_DESTROY, "DESTROY_COUNTERS", kCountersDestroy},
    {UVERBS_OBJECT_COUNTERS, UVERBS_METHOD_COUNTERS_READ, "READ_COUNTERS", kCountersRead},
    {UVERBS_OBJECT_ASYNC_EVENT, UVERBS_METHOD_ASYNC_EVENT_ALLOC, "ALLOC", kAsyncEventAlloc},
    {nw::kObjectDmah, nw::kMethodDmahAlloc, "ALLOC_DMAH", kDmahAlloc},
    {nw::kObjectDmah, nw::kMethodDmahFree, "FREE_DMAH", kDmahFree},
    {nw::kObjectDmabuf, nw::kMethodDmabufAlloc, "ALLOC_DMABUF", kDmabufAlloc},
};

// Legacy command structs: offsets straight from the uapi structs.
#define F(st, field, fmt)                                                        \
  WriteField {                                                                   \
#field, offsetof(st, field), sizeof(((st*)nullptr)->field), FieldFormat::fmt \
  }
using FF = FieldFormat;

constexpr WriteField kNone[] = {{"", 0, 0, FF::kDec}};
constexpr std::span<const WriteField> kNoFields = std::span<const WriteField>(kNone, 0);

constexpr WriteField kAllocPdOut[] = {F(ib_uverbs_alloc_pd_resp, pd_handle, kHandle)};
constexpr WriteField kDeallocPdIn[] = {F(ib_uverbs_dealloc_pd, pd_handle, kHandle)};
constexpr WriteField kRegMrIn[] = {
    F(ib_uverbs_reg_mr, start, kHex),           F(ib_uverbs_reg_mr, length, kDec),
    F(ib_uverbs_reg_mr, hca_va, kHex),          F(ib_uverbs_reg_mr, pd_handle, kHandle),
    F(ib_uverbs_reg_mr, access_flags, kAccess),
};
constexpr WriteField kRegMrOut[] = {
    F(ib_uverbs_reg_mr_resp, mr_handle, kHandle),
    F(ib_uverbs_reg_mr_resp, lkey, kHex),
    F(ib_uverbs_reg_mr_resp, rkey, kHex),
};
constexpr WriteField kRereg[] = {
    F(ib_uverbs_rereg_mr, mr_handle, kHandle), F(ib_uverbs_rereg_mr, flags, kHex),
    F(ib_uverbs_rereg_mr, start, kHex),        F(ib_uverbs_rereg_mr, length, kDec),
    F(ib_uverbs_rereg_mr, pd_handle, kHandle), F(ib_uverbs_rereg_mr, access_flags, kAccess),
};
constexpr WriteField kDeregMrIn[] = {F(ib_uverbs_dereg_mr, mr_handle, kHandle)};
constexpr WriteField kAllocMwIn[] = {F(ib_uverbs_alloc_mw, pd_handle, kHandle),
                                     F(ib_uverbs_alloc_mw, mw_type, kDec)};
constexpr WriteField kAllocMwOut[] = {F(ib_uverbs_alloc_mw_resp, mw_handle, kHandle),
                                      F(ib_uverbs_alloc_mw_resp, rkey, kHex)};
constexpr WriteField kDeallocMwIn[] = {F(ib_uverbs_dealloc_mw, mw_handle, kHandle)};
constexpr WriteField kCompChannelOut[] = {F(ib_uverbs_create_comp_channel_resp, fd, kFd)};
constexpr WriteField kCreateCqIn[] = {
    F(ib_uverbs_create_cq, user_handle, kHex),
    F(ib_uverbs_create_cq, cqe, kDec),
    F(ib_uverbs_create_cq, comp_vector, kDec),
    F(ib_uverbs_create_cq, comp_channel, kFd),
};
constexpr WriteField kCreateCqOut[] = {F(ib_uverbs_create_cq_resp, cq_handle, kHandle),
                                       F(ib_uverbs_create_cq_resp, cqe, kDec)};
constexpr WriteField kExCreateCqIn[] = {
    F(ib_uverbs_ex_create_cq, user_handle, kHex), F(ib_uverbs_ex_create_cq, cqe, kDec),
    F(ib_uverbs_ex_create_cq, comp_vector, kDec), F(ib_uverbs_ex_create_cq, comp_channel, kFd),
    F(ib_uverbs_ex_create_cq, flags, kHex),
};
constexpr WriteField kExCreateCqOut[] = {F(ib_uverbs_ex_create_cq_resp, base.cq_handle, kHandle),
                                         F(ib_uverbs_ex_create_cq_resp, base.cqe, kDec)};
constexpr WriteField kResizeCqIn[] = {F(ib_uverbs_resize_cq, cq_handle, kHandle),
                                      F(ib_uverbs_resize_cq, cqe, kDec)};
constexpr WriteField kDestroyCqIn[] = {F(ib_uverbs_destroy_cq, cq_handle, kHandle)};
constexpr WriteField kPollCqIn[] = {F(ib_uverbs_poll_cq, cq_handle, kHandle),
                                    F(ib_uverbs_poll_cq, ne, kDec)};
constexpr WriteField kReqNotifyIn[] = {F(ib_uverbs_req_notify_cq, cq_handle, kHandle),
                                       F(ib_uverbs_req_notify_cq, solicited_only, kDec)};
constexpr WriteField kCreateQpIn[] = {
    F(ib_uverbs_create_qp, pd_handle, kHandle),
    F(ib_uverbs_create_qp, send_cq_handle, kHandle),
    F(ib_uverbs_create_qp, recv_cq_handle, kHandle),
    F(ib_uverbs_create_qp, srq_handle, kHandle),
    F(ib_uverbs_create_qp, max_send_wr, kDec),
    F(ib_uverbs_create_qp, max_recv_wr, kDec),
    F(ib_uverbs_create_qp, qp_type, kDec),
};
constexpr WriteField kCreateQpOut[] = {F(ib_uverbs_create_qp_resp, qp_handle, kHandle),
                                       F(ib_uverbs_create_qp_resp, qpn, kDec)};
constexpr WriteField kExCreateQpIn[] = {
    F(ib_uverbs_ex_create_qp, pd_handle, kHandle),
    F(ib_uverbs_ex_create_qp, send_cq_handle, kHandle),
    F(ib_uverbs_ex_create_qp, recv_cq_handle, kHandle),
    F(ib_uverbs_ex_create_qp, srq_handle, kHandle),
    F(ib_uverbs_ex_create_qp, qp_type, kDec),
    F(ib_uverbs_ex_create_qp, create_flags, kHex),
};
constexpr WriteField kExCreateQpOut[] = {F(ib_uverbs_ex_create_qp_resp, base.qp_handle, kHandle),
                                         F(ib_uverbs_ex_create_qp_resp, base.qpn, kDec)};
constexpr WriteField kQueryQpIn[] = {F(ib_uverbs_query_qp, qp_handle, kHandle),
                                     F(ib_uverbs_query_qp, attr_mask, kQpAttrMask)};
constexpr WriteField kModifyQpIn[] = {
    F(ib_uverbs_modify_qp, qp_handle, kHandle),    F(ib_uverbs_modify_qp, attr_mask, kQpAttrMask),
    F(ib_uverbs_modify_qp, qp_state, kQpState),    F(ib_uverbs_modify_qp, dest_qp_num, kDec),
    F(ib_uverbs_modify_qp, path_mtu, kDec),        F(ib_uverbs_modify_qp, port_num, kDec),
    F(ib_uverbs_modify_qp, dest.sgid_index, kDec),
};
constexpr WriteField kExModifyQpIn[] = {
    F(ib_uverbs_ex_modify_qp, base.qp_handle, kHandle),
    F(ib_uverbs_ex_modify_qp, base.attr_mask, kQpAttrMask),
    F(ib_uverbs_ex_modify_qp, base.qp_state, kQpState),
    F(ib_uverbs_ex_modify_qp, base.dest_qp_num, kDec),
    F(ib_uverbs_ex_modify_qp, base.port_num, kDec),
    F(ib_uverbs_ex_modify_qp, rate_limit, kDec),
};
constexpr WriteField kDestroyQpIn[] = {F(ib_uverbs_destroy_qp, qp_handle, kHandle)};
constexpr WriteField kPostSendIn[] = {F(ib_uverbs_post_send, qp_handle, kHandle),
                                      F(ib_uverbs_post_send, wr_count, kDec)};
constexpr WriteField kPostRecvIn[] = {F(ib_uverbs_post_recv, qp_handle, kHandle),
                                      F(ib_uverbs_post_recv, wr_count, kDec)};
constexpr WriteField kPostSrqRecvIn[] = {F(ib_uverbs_post_srq_recv, srq_handle, kHandle),
                                         F(ib_uverbs_post_srq_recv, wr_count, kDec)};
constexpr WriteField kCreateAhIn[] = {F(ib_uverbs_create_ah, pd_handle, kHandle),
                                      F(ib_uverbs_create_ah, attr.grh.sgid_index, kDec),
                                      F(ib_uverbs_create_ah, attr.port_num, kDec)};
constexpr WriteField kCreateAhOut[] = {F(ib_uverbs_create_ah_resp, ah_handle, kHandle)};
constexpr WriteField kDestroyAhIn[] = {F(ib_uverbs_destroy_ah, ah_handle, kHandle)};
constexpr WriteField kMcastIn[] = {F(ib_uverbs_attach_mcast, qp_handle, kHandle),
                                   F(ib_uverbs_attach_mcast, mlid, kHex)};
constexpr WriteField kCreateSrqIn[] = {
    F(ib_uverbs_create_srq, pd_handle, kHandle), F(ib_uverbs_create_srq, max_wr, kDec),
    F(ib_uverbs_create_srq, max_sge, kDec), F(ib_uverbs_create_srq, srq_limit, kDec)};
constexpr WriteField kCreateXsrqIn[] = {
    F(ib_uverbs_create_xsrq, srq_type, kDec),       F(ib_uverbs_create_xsrq, pd_handle, kHandle),
    F(ib_uverbs_create_xsrq, max_wr, kDec),         F(ib_uverbs_create_xsrq, max_sge, kDec),
    F(ib_uverbs_create_xsrq, xrcd_handle, kHandle), F(ib_uverbs_create_xsrq, cq_handle, kHandle)};
constexpr WriteField kCreateSrqOut[] = {F(ib_uverbs_create_srq_resp, srq_handle, kHandle),
                                        F(ib_uverbs_create_srq_resp, max_wr, kDec),
                                        F(ib_uverbs_create_srq_resp, srqn, kDec)};
constexpr WriteField kModifySrqIn[] = {
    F(ib_uverbs_modify_srq, srq_handle, kHandle), F(ib_uverbs_modify_srq, attr_mask, kHex),
    F(ib_uverbs_modify_srq, max_wr, kDec), F(ib_uverbs_modify_srq, srq_limit, kDec)};
constexpr WriteField kQuerySrqIn[] = {F(ib_uverbs_query_srq, srq_handle, kHandle)};
constexpr WriteField kDestroySrqIn[] = {F(ib_uverbs_destroy_srq, srq_handle, kHandle)};
constexpr WriteField kOpenXrcdIn[] = {F(ib_uverbs_open_xrcd, fd, kFd),
                                      F(ib_uverbs_open_xrcd, oflags, kHex)};
constexpr WriteField kOpenXrcdOut[] = {F(ib_uverbs_open_xrcd_resp, xrcd_handle, kHandle)};
constexpr WriteField kCloseXrcdIn[] = {F(ib_uverbs_close_xrcd, xrcd_handle, kHandle)};
constexpr WriteField kOpenQpIn[] = {F(ib_uverbs_open_qp, pd_handle, kHandle),
                                    F(ib_uverbs_open_qp, qpn, kDec),
                                    F(ib_uverbs_open_qp, qp_type, kDec)};
constexpr WriteField kQueryPortIn[] = {F(ib_uverbs_query_port, port_num, kDec)};
constexpr WriteField kGetContextOut[] = {F(ib_uverbs_get_context_resp, async_fd, kFd),
                                         F(ib_uverbs_get_context_resp, num_comp_vectors, kDec)};
constexpr WriteField kCreateFlowIn[] = {F(ib_uverbs_create_flow, qp_handle, kHandle)};
constexpr WriteField kCreateFlowOut[] = {F(ib_uverbs_create_flow_resp, flow_handle, kHandle)};
constexpr WriteField kDestroyFlowIn[] = {F(ib_uverbs_destroy_flow, flow_handle, kHandle)};
constexpr WriteField kCreateWqIn[] = {
    F(ib_uverbs_ex_create_wq, wq_type, kDec), F(ib_uverbs_ex_create_wq, pd_handle, kHandle),
    F(ib_uverbs_ex_create_wq, cq_handle, kHandle), F(ib_uverbs_ex_create_wq, max_wr, kDec)};
constexpr WriteField kCreateWqOut[] = {F(ib_uverbs_ex_create_wq_resp, wq_handle, kHandle),
                                       F(ib_uverbs_ex_create_wq_resp, wqn, kDec)};
constexpr WriteField kModifyWqIn[] = {F(ib_uverbs_ex_modify_wq, wq_handle, kHandle),
                                      F(ib_uverbs_ex_modify_wq, wq_state, kDec)};
constexpr WriteField kDestroyWqIn[] = {F(ib_uverbs_ex_destroy_wq, wq_handle, kHandle)};
constexpr WriteField kCreateRwqIn[] = {
    F(ib_uverbs_ex_create_rwq_ind_table, log_ind_tbl_size, kDec)};
constexpr WriteField kCreateRwqOut[] = {
    F(ib_uverbs_ex_create_rwq_ind_table_resp, ind_tbl_handle, kHandle)};
constexpr WriteField kDestroyRwqIn[] = {
    F(ib_uverbs_ex_destroy_rwq_ind_table, ind_tbl_handle, kHandle)};
constexpr WriteField kModifyCqIn[] = {F(ib_uverbs_ex_modify_cq, cq_handle, kHandle),
                                      F(ib_uverbs_ex_modify_cq, attr_mask, kHex)};
#undef F

constexpr uint32_t kEx = IB_USER_VERBS_CMD_FLAG_EXTENDED;
constexpr WriteCmdSpec kWriteCmds[] = {
    {IB_USER_VERBS_CMD_GET_CONTEXT, "GET_CONTEXT", kNoFields, kGetContextOut},
    {IB_USER_VERBS_CMD_QUERY_DEVICE, "QUERY_DEVICE", kNoFields, kNoFields},
    {IB_USER_VERBS_CMD_QUERY_PORT, "QUERY_PORT", kQueryPortIn, kNoFields},
    {IB_USER_VERBS_CMD_ALLOC_PD, "ALLOC_PD", kNoFields, kAllocPdOut},
    {IB_USER_VERBS_CMD_DEALLOC_PD, "DEALLOC_PD", kDeallocPdIn, kNoFields},
    {IB_USER_VERBS_CMD_CREATE_AH, "CREATE_AH", kCreateAhIn, kCreateAhOut},
    {IB_USER_VERBS_CMD_MODIFY_AH, "MODIFY_AH", kNoFields, kNoFields},
    {IB_USER_VERBS_CMD_QUERY_AH, "QUERY_AH", kNoFields, kNoFields},
    {IB_USER_VERBS_CMD_DESTROY_AH, "DESTROY_AH", kDestroyAhIn, kNoFields},
    {IB_USER_VERBS_CMD_REG_MR, "REG_MR", kRegMrIn, kRegMrOut},
    {IB_USER_VERBS_CMD_REG_SMR, "REG_SMR", kNoFields, kNoFields},
    {IB_USER_VERBS_CMD_REREG_MR, "REREG_MR", kRereg, kNoFields},
    {IB_USER_VERBS_CMD_QUERY_MR, "QUERY_MR", kNoFields, kNoFields},
    {IB_USER_VERBS_CMD_DEREG_MR, "DEREG_MR", kDeregMrIn, kNoFields},
    {IB_USER_VERBS_CMD_ALLOC_MW, "ALLOC_MW", kAllocMwIn, kAllocMwOut},
    {IB_USER_VERBS_CMD_BIND_MW, "BIND_MW", kNoFields, kNoFields},
    {IB_USER_VERBS_CMD_DEALLOC_MW, "DEALLOC_MW", kDeallocMwIn, kNoFields},
    {IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, "CREATE_COMP_CHANNEL", kNoFields, kCompChannelOut},
    {IB_USER_VERBS_CMD_CREATE_CQ, "CREATE_CQ", kCreateCqIn, kCreateCqOut},
    {IB_USER_VERBS_CMD_RESIZE_CQ, "RESIZE_CQ", kResizeCqIn, kNoFields},
    {IB_USER_VERBS_CMD_DESTROY_CQ, "DESTROY_CQ", kDestroyCqIn, kNoFields},
    {IB_USER_VERBS_CMD_POLL_CQ, "POLL_CQ", kPollCqIn, kNoFields},
    {IB_USER_VERBS_CMD_PEEK_CQ, "PEEK_CQ", kNoFields, kNoFields},
    {IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, "REQ_NOTIFY_CQ", kReqNotifyIn, kNoFields},
    {IB_USER_VERBS_CMD_CREATE_QP, "CREATE_QP", kCreateQpIn, kCreateQpOut},
    {IB_USER_VERBS_CMD_QUERY_QP, "QUERY_QP", kQueryQpIn, kNoFields},
    {IB_USER_VERBS_CMD_MODIFY_QP, "MODIFY_QP", kModifyQpIn, kNoFields},
    {IB_USER_VERBS_CMD_DESTROY_QP, "DESTROY_QP", kDestroyQpIn, kNoFields},
    {IB_USER_VERBS_CMD_POST_SEND, "POST_SEND", kPostSendIn, kNoFields},
    {IB_USER_VERBS_CMD_POST_RECV, "POST_RECV", kPostRecvIn, kNoFields},
    {IB_USER_VERBS_CMD_ATTACH_MCAST, "ATTACH_MCAST", kMcastIn, kNoFields},
    {IB_USER_VERBS_CMD_DETACH_MCAST, "DETACH_MCAST", kMcastIn, kNoFields},
    {IB_USER_VERBS_CMD_CREATE_SRQ, "CREATE_SRQ", kCreateSrqIn, kCreateSrqOut},
    {IB_USER_VERBS_CMD_MODIFY_SRQ, "MODIFY_SRQ", kModifySrqIn, kNoFields},
    {IB_USER_VERBS_CMD_QUERY_SRQ, "QUERY_SRQ", kQuerySrqIn, kNoFields},
    {IB_USER_VERBS_CMD_DESTROY_SRQ, "DESTROY_SRQ", kDestroySrqIn, kNoFields},
    {IB_USER_VERBS_CMD_POST_SRQ_RECV, "POST_SRQ_RECV", kPostSrqRecvIn, kNoFields},
    {IB_USER_VERBS_CMD_OPEN_XRCD, "OPEN_XRCD", kOpenXrcdIn, kOpenXrcdOut},
    {IB_USER_VERBS_CMD_CLOSE_XRCD, "CLOSE_XRCD", kCloseXrcdIn, kNoFields},
    {IB_USER_VERBS_CMD_CREATE_XSRQ, "CREATE_XSRQ", kCreateXsrqIn, kCreateSrqOut},
    {IB_USER_VERBS_CMD_OPEN_QP, "OPEN_QP", kOpenQpIn, kCreateQpOut},
    {kEx | IB_USER_VERBS_EX_CMD_QUERY_DEVICE, "EX_QUERY_DEVICE", kNoFields, kNoFields},
    {kEx | IB_USER_VERBS_EX_CMD_CREATE_CQ, "EX_CREATE_CQ", kExCreateCqIn, kExCreateCqOut},
    {kEx | IB_USER_VERBS_EX_CMD_CREATE_QP, "EX_CREATE_QP", kExCreateQpIn, kExCreateQpOut},
    {kEx | IB_USER_VERBS_EX_CMD_MODIFY_QP, "EX_MODIFY_QP", kExModifyQpIn, kNoFields},
    {kEx | IB_USER_VERBS_EX_CMD_CREATE_FLOW, "EX_CREATE_FLOW", kCreateFlowIn, kCreateFlowOut},
    {kEx | IB_USER_VERBS_EX_CMD_DESTROY_FLOW, "EX_DESTROY_FLOW", kDestroyFlowIn, kNoFields},
    {kEx | IB_USER_VERBS_EX_CMD_CREATE_WQ, "EX_CREATE_WQ", kCreateWqIn, kCreateWqOut},
    {kEx | IB_USER_VERBS_EX_CMD_MODIFY_WQ, "EX_MODIFY_WQ", kModifyWqIn, kNoFields},
    {kEx | IB_USER_VERBS_EX_CMD_DESTROY_WQ, "EX_DESTROY_WQ", kDestroyWqIn, kNoFields},
    {kEx | IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL, "EX_CREATE_RWQ_IND_TBL", kCreateRwqIn,
     kCreateRwqOut},
    {kEx | IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL, "EX_DESTROY_RWQ_IND_TBL", kDestroyRwqIn,
     kNoFields},
    {kEx | IB_USER_VERBS_EX_CMD_MODIFY_CQ, "EX_MODIFY_CQ", kModifyCqIn, kNoFields},
};

}  // namespace

std::span<const ObjectSpec> all_objects() {
  return kObjects;
}
std::span<const MethodSpec> all_methods() {
  return kMethods;
}
std::span<const WriteCmdSpec> all_write_cmds() {
  return kWriteCmds;
}

GDRPROXY_HOT const ObjectSpec* find_object(uint16_t id) {
  for (const auto& o : kObjects)
    if (o.id == id) return &o;
  return nullptr;
}
const ObjectSpec* find_object(std::string_view name) {
  for (const auto& o : kObjects)
    if (name == o.name) return &o;
  return nullptr;
}
GDRPROXY_HOT const MethodSpec* find_method(uint16_t object, uint16_t method) {
  for (const auto& m : kMethods)
    if (m.object == object && m.method == method) return &m;
  return nullptr;
}
const MethodSpec* find_method(uint16_t object, std::string_view name) {
  for (const auto& m : kMethods)
    if (m.object == object && name == m.name) return &m;
  return nullptr;
}
GDRPROXY_HOT const WriteCmdSpec* find_write_cmd(uint32_t cmd) {
  for (const auto& c : kWriteCmds)
    if (c.cmd == cmd) return &c;
  return nullptr;
}
const WriteCmdSpec* find_write_cmd(std::string_view name) {
  for (const auto& c : kWriteCmds)
    if (name == c.name) return &c;
  return nullptr;
}
GDRPROXY_HOT const AttrSpec* find_common_attr(uint16_t id) {
  for (const auto& a : kCommonAttrs)
    if (a.id == id) return &a;
  return nullptr;
}

std::string render_access_flags(uint64_t flags) {
  static constexpr std::pair<uint64_t, const char*> kBits[] = {
      {IB_UVERBS_ACCESS_LOCAL_WRITE, "LOCAL_WRITE"},
      {IB_UVERBS_ACCESS_REMOTE_WRITE, "REMOTE_WRITE"},
      {IB_UVERBS_ACCESS_REMOTE_READ, "REMOTE_READ"},
      {IB_UVERBS_ACCESS_REMOTE_ATOMIC, "REMOTE_ATOMIC"},
      {IB_UVERBS_ACCESS_MW_BIND, "MW_BIND"},
      {IB_UVERBS_ACCESS_ZERO_BASED, "ZERO_BASED"},
      {IB_UVERBS_ACCESS_ON_DEMAND, "ON_DEMAND"},
      {IB_UVERBS_ACCESS_HUGETLB, "HUGETLB"},
      {IB_UVERBS_ACCESS_RELAXED_ORDERING, "RELAXED_ORDERING"},
  };
  std::string out;
  for (auto [bit, name] : kBits) {
    if (!(flags & bit)) continue;
    if (!out.empty()) out += '|';
    out += name;
    flags &= ~bit;
  }
  if (flags) {
    if (!out.empty()) out += '|';
    out += hex(flags);
  }
  return out.empty() ? "0" : out;
}

const char* qp_state_name(uint64_t state) {
  static constexpr const char* kStates[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
  return state < std::size(kStates) ? kStates[state] : "?";
}

std::string render_qp_attr_mask(uint64_t mask) {
  // IB_QP_* attribute mask bits (ib_verbs.h enum ib_qp_attr_mask order).
  static constexpr const char* kBits[] = {
      "STATE",
      "CUR_STATE",
      "EN_SQD_ASYNC_NOTIFY",
      "ACCESS_FLAGS",
      "PKEY_INDEX",
      "PORT",
      "QKEY",
      "AV",
      "PATH_MTU",
      "TIMEOUT",
      "RETRY_CNT",
      "RNR_RETRY",
      "RQ_PSN",
      "MAX_QP_RD_ATOMIC",
      "ALT_PATH",
      "MIN_RNR_TIMER",
      "SQ_PSN",
      "MAX_DEST_RD_ATOMIC",
      "PATH_MIG_STATE",
      "CAP",
      "DEST_QPN",
      "RESERVED1",
      "RESERVED2",
      "RESERVED3",
      "RESERVED4",
      "RATE_LIMIT",
  };
  std::string out;
  for (size_t i = 0; i < std::size(kBits); ++i) {
    if (!(mask & (1ull << i))) continue;
    if (!out.empty()) out += '|';
    out += kBits[i];
  }
  const uint64_t known = (1ull << std::size(kBits)) - 1;
  if (mask & ~known) {
    if (!out.empty()) out += '|';
    out += hex(mask & ~known);
  }
  return out.empty() ? "0" : out;
}

}  // namespace gdrproxy::proxy::uverbs
