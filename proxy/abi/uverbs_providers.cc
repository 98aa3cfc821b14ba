// The providers' driver-namespace tables (see uverbs_providers.h). Numbers are the kernel's uapi
// headers' (rdma-core vendors them under kernel-headers/rdma/; checked against rdma-core master
// 691953d8 of 2026-08): where this build's <rdma/*.h> has the enum the constant is used, where it
// is newer than the distribution's headers the number is written out next to its name. Which
// methods a provider's library issues is from rdma-core's providers/<name>/ at the same commit
// (its DECLARE_COMMAND_BUFFER / DECLARE_COMMAND_BUFFER_LINK calls).
//
// Attribute kinds: a handle the kernel creates or destroys is declared so (the kernel's naming:
// *_CREATE_HANDLE, *_ALLOC_HANDLE, *_DESTROY_HANDLE), a dma-buf fd as kRawFd (the policy checks
// its provenance as for REG_DMABUF_MR); everything else is kOpaque: named, its data word shown
// as it is, never interpreted.
#include "proxy/abi/uverbs_providers.h"

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/mlx5_user_ioctl_cmds.h>

#include "base/hot_path.h"

namespace gdrproxy::proxy::uverbs {
namespace {

using K = AttrKind;

constexpr uint16_t kNs = 1u << UVERBS_ID_NS_SHIFT;  // UVERBS_ID_NS_SPECIFIC
// UVERBS_ID_DRIVER_NS_WITH_UHW: the first driver attribute after UHW_IN/UHW_OUT.
constexpr uint16_t kNsWithUhw = kNs + 2;
static_assert(UVERBS_ATTR_UHW_IN == kNs && UVERBS_ATTR_UHW_OUT == kNs + 1);

static_assert(RDMA_DRIVER_ERDMA == 19, "MANA and IONIC follow ERDMA");

// ---- mlx5 (mlx5_user_ioctl_cmds.h) -------------------------------------------------------------

constexpr ObjectSpec kMlx5Objects[] = {
    {MLX5_IB_OBJECT_DEVX, "MLX5_DEVX"},
    {MLX5_IB_OBJECT_DEVX_OBJ, "MLX5_DEVX_OBJ"},
    {MLX5_IB_OBJECT_DEVX_UMEM, "MLX5_DEVX_UMEM"},
    {MLX5_IB_OBJECT_FLOW_MATCHER, "MLX5_FLOW_MATCHER"},
    {MLX5_IB_OBJECT_DEVX_ASYNC_CMD_FD, "MLX5_DEVX_ASYNC_CMD_FD"},
    {MLX5_IB_OBJECT_DEVX_ASYNC_EVENT_FD, "MLX5_DEVX_ASYNC_EVENT_FD"},
    {MLX5_IB_OBJECT_VAR, "MLX5_VAR"},
    {MLX5_IB_OBJECT_PP, "MLX5_PP"},
    {MLX5_IB_OBJECT_UAR, "MLX5_UAR"},
    {MLX5_IB_OBJECT_STEERING_ANCHOR, "MLX5_STEERING_ANCHOR"},
};

constexpr AttrSpec kMlx5DevxOther[] = {
    {MLX5_IB_ATTR_DEVX_OTHER_CMD_IN, "cmd_in", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT, "cmd_out", K::kOpaque},
};
constexpr AttrSpec kMlx5DevxQueryUar[] = {
    {MLX5_IB_ATTR_DEVX_QUERY_UAR_USER_IDX, "user_idx", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_QUERY_UAR_DEV_IDX, "dev_idx", K::kOpaque},
};
constexpr AttrSpec kMlx5DevxQueryEqn[] = {
    {MLX5_IB_ATTR_DEVX_QUERY_EQN_USER_VEC, "user_vec", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_QUERY_EQN_DEV_EQN, "dev_eqn", K::kOpaque},
};
constexpr AttrSpec kMlx5DevxSubscribe[] = {
    {MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_FD_HANDLE, "fd_handle", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_OBJ_HANDLE, "obj_handle", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_TYPE_NUM_LIST, "type_num_list", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_FD_NUM, "fd_num", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_SUBSCRIBE_EVENT_COOKIE, "cookie", K::kOpaque},
};
constexpr AttrSpec kMlx5DevxObjCreate[] = {
    {MLX5_IB_ATTR_DEVX_OBJ_CREATE_HANDLE, "handle", K::kIdrNew},
    {MLX5_IB_ATTR_DEVX_OBJ_CREATE_CMD_IN, "cmd_in", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_OBJ_CREATE_CMD_OUT, "cmd_out", K::kOpaque},
};
constexpr AttrSpec kMlx5DevxObjDestroy[] = {
    {MLX5_IB_ATTR_DEVX_OBJ_DESTROY_HANDLE, "handle", K::kIdrDestroy}};
constexpr AttrSpec kMlx5DevxObjModify[] = {
    {MLX5_IB_ATTR_DEVX_OBJ_MODIFY_HANDLE, "handle", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_OBJ_MODIFY_CMD_IN, "cmd_in", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_OBJ_MODIFY_CMD_OUT, "cmd_out", K::kOpaque},
};
constexpr AttrSpec kMlx5DevxObjQuery[] = {
    {MLX5_IB_ATTR_DEVX_OBJ_QUERY_HANDLE, "handle", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_OBJ_QUERY_CMD_IN, "cmd_in", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_OBJ_QUERY_CMD_OUT, "cmd_out", K::kOpaque},
};
constexpr AttrSpec kMlx5DevxObjAsyncQuery[] = {
    {MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_HANDLE, "handle", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_CMD_IN, "cmd_in", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_FD, "fd", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_WR_ID, "wr_id", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_OBJ_QUERY_ASYNC_OUT_LEN, "out_len", K::kOpaque},
};
constexpr AttrSpec kMlx5UmemReg[] = {
    {MLX5_IB_ATTR_DEVX_UMEM_REG_HANDLE, "handle", K::kIdrNew},
    {MLX5_IB_ATTR_DEVX_UMEM_REG_ADDR, "addr", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_UMEM_REG_LEN, "len", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_UMEM_REG_ACCESS, "access", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_UMEM_REG_OUT_ID, "out_id", K::kOpaque},
    {MLX5_IB_ATTR_DEVX_UMEM_REG_PGSZ_BITMAP, "pgsz_bitmap", K::kOpaque},
    // A dma-buf registered as DEVX memory: the same provenance check as REG_DMABUF_MR's fd.
    {MLX5_IB_ATTR_DEVX_UMEM_REG_DMABUF_FD, "dmabuf_fd", K::kRawFd},
};
constexpr AttrSpec kMlx5UmemDereg[] = {
    {MLX5_IB_ATTR_DEVX_UMEM_DEREG_HANDLE, "handle", K::kIdrDestroy}};
constexpr AttrSpec kMlx5FlowMatcherCreate[] = {
    {MLX5_IB_ATTR_FLOW_MATCHER_CREATE_HANDLE, "handle", K::kIdrNew},
    {MLX5_IB_ATTR_FLOW_MATCHER_MATCH_MASK, "match_mask", K::kOpaque},
    {MLX5_IB_ATTR_FLOW_MATCHER_FLOW_TYPE, "flow_type", K::kOpaque},
    {MLX5_IB_ATTR_FLOW_MATCHER_MATCH_CRITERIA, "match_criteria", K::kOpaque},
    {MLX5_IB_ATTR_FLOW_MATCHER_FLOW_FLAGS, "flow_flags", K::kOpaque},
    {MLX5_IB_ATTR_FLOW_MATCHER_FT_TYPE, "ft_type", K::kOpaque},
    {MLX5_IB_ATTR_FLOW_MATCHER_FT_TYPE + 1, "ib_port", K::kOpaque},  // ..._FLOW_MATCHER_IB_PORT
};
constexpr AttrSpec kMlx5FlowMatcherDestroy[] = {
    {MLX5_IB_ATTR_FLOW_MATCHER_DESTROY_HANDLE, "handle", K::kIdrDestroy}};
constexpr AttrSpec kMlx5AsyncCmdFdAlloc[] = {
    {MLX5_IB_ATTR_DEVX_ASYNC_CMD_FD_ALLOC_HANDLE, "fd", K::kFdNew}};
constexpr AttrSpec kMlx5AsyncEventFdAlloc[] = {
    {MLX5_IB_ATTR_DEVX_ASYNC_EVENT_FD_ALLOC_HANDLE, "fd", K::kFdNew},
    {MLX5_IB_ATTR_DEVX_ASYNC_EVENT_FD_ALLOC_FLAGS, "flags", K::kOpaque},
};
constexpr AttrSpec kMlx5VarAlloc[] = {
    {MLX5_IB_ATTR_VAR_OBJ_ALLOC_HANDLE, "handle", K::kIdrNew},
    {MLX5_IB_ATTR_VAR_OBJ_ALLOC_MMAP_OFFSET, "mmap_offset", K::kOpaque},
    {MLX5_IB_ATTR_VAR_OBJ_ALLOC_MMAP_LENGTH, "mmap_length", K::kOpaque},
    {MLX5_IB_ATTR_VAR_OBJ_ALLOC_PAGE_ID, "page_id", K::kOpaque},
    {MLX5_IB_ATTR_VAR_OBJ_ALLOC_PAGE_ID + 1, "flags", K::kOpaque},  // ..._VAR_OBJ_ALLOC_FLAGS
};
constexpr AttrSpec kMlx5VarDestroy[] = {
    {MLX5_IB_ATTR_VAR_OBJ_DESTROY_HANDLE, "handle", K::kIdrDestroy}};
constexpr AttrSpec kMlx5PpAlloc[] = {
    {MLX5_IB_ATTR_PP_OBJ_ALLOC_HANDLE, "handle", K::kIdrNew},
    {MLX5_IB_ATTR_PP_OBJ_ALLOC_CTX, "ctx", K::kOpaque},
    {MLX5_IB_ATTR_PP_OBJ_ALLOC_FLAGS, "flags", K::kOpaque},
    {MLX5_IB_ATTR_PP_OBJ_ALLOC_INDEX, "index", K::kOpaque},
};
constexpr AttrSpec kMlx5PpDestroy[] = {
    {MLX5_IB_ATTR_PP_OBJ_DESTROY_HANDLE, "handle", K::kIdrDestroy}};
constexpr AttrSpec kMlx5UarAlloc[] = {
    {MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE, "handle", K::kIdrNew},
    {MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE, "type", K::kOpaque},
    {MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET, "mmap_offset", K::kOpaque},
    {MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH, "mmap_length", K::kOpaque},
    {MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID, "page_id", K::kOpaque},
};
constexpr AttrSpec kMlx5UarDestroy[] = {
    {MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE, "handle", K::kIdrDestroy}};
constexpr AttrSpec kMlx5AnchorCreate[] = {
    {MLX5_IB_ATTR_STEERING_ANCHOR_CREATE_HANDLE, "handle", K::kIdrNew},
    {MLX5_IB_ATTR_STEERING_ANCHOR_FT_TYPE, "ft_type", K::kOpaque},
    {MLX5_IB_ATTR_STEERING_ANCHOR_PRIORITY, "priority", K::kOpaque},
    {MLX5_IB_ATTR_STEERING_ANCHOR_FT_ID, "ft_id", K::kOpaque},
};
constexpr AttrSpec kMlx5AnchorDestroy[] = {
    {MLX5_IB_ATTR_STEERING_ANCHOR_DESTROY_HANDLE, "handle", K::kIdrDestroy}};
// Driver methods on core objects.
constexpr AttrSpec kMlx5DmMapOpAddr[] = {
    {MLX5_IB_ATTR_DM_MAP_OP_ADDR_REQ_HANDLE, "dm", K::kOpaque},
    {MLX5_IB_ATTR_DM_MAP_OP_ADDR_REQ_OP, "op", K::kOpaque},
    {MLX5_IB_ATTR_DM_MAP_OP_ADDR_RESP_START_OFFSET, "start_offset", K::kOpaque},
    {MLX5_IB_ATTR_DM_MAP_OP_ADDR_RESP_PAGE_INDEX, "page_index", K::kOpaque},
};
constexpr AttrSpec kMlx5DmQuery[] = {
    {MLX5_IB_ATTR_QUERY_DM_REQ_HANDLE, "dm", K::kOpaque},
    {MLX5_IB_ATTR_QUERY_DM_RESP_START_OFFSET, "start_offset", K::kOpaque},
    {MLX5_IB_ATTR_QUERY_DM_RESP_PAGE_INDEX, "page_index", K::kOpaque},
    {MLX5_IB_ATTR_QUERY_DM_RESP_LENGTH, "length", K::kOpaque},
};
constexpr AttrSpec kMlx5CreateFlow[] = {
    {MLX5_IB_ATTR_CREATE_FLOW_HANDLE, "handle", K::kIdrNew},
    {MLX5_IB_ATTR_CREATE_FLOW_MATCH_VALUE, "match_value", K::kOpaque},
    {MLX5_IB_ATTR_CREATE_FLOW_DEST_QP, "dest_qp", K::kOpaque},
    {MLX5_IB_ATTR_CREATE_FLOW_DEST_DEVX, "dest_devx", K::kOpaque},
    {MLX5_IB_ATTR_CREATE_FLOW_MATCHER, "matcher", K::kOpaque},
    {MLX5_IB_ATTR_CREATE_FLOW_ARR_FLOW_ACTIONS, "flow_actions", K::kOpaque},
    {MLX5_IB_ATTR_CREATE_FLOW_TAG, "tag", K::kOpaque},
    {MLX5_IB_ATTR_CREATE_FLOW_ARR_COUNTERS_DEVX, "counters_devx", K::kOpaque},
    {MLX5_IB_ATTR_CREATE_FLOW_ARR_COUNTERS_DEVX_OFFSET, "counters_devx_offset", K::kOpaque},
    {MLX5_IB_ATTR_CREATE_FLOW_FLAGS, "flags", K::kOpaque},
};
constexpr AttrSpec kMlx5DestroyFlow[] = {
    {MLX5_IB_ATTR_DESTROY_FLOW_HANDLE, "handle", K::kIdrDestroy}};
constexpr AttrSpec kMlx5ModifyHeader[] = {
    {MLX5_IB_ATTR_CREATE_MODIFY_HEADER_HANDLE, "handle", K::kIdrNew},
    {MLX5_IB_ATTR_CREATE_MODIFY_HEADER_ACTIONS_PRM, "actions_prm", K::kOpaque},
    {MLX5_IB_ATTR_CREATE_MODIFY_HEADER_FT_TYPE, "ft_type", K::kOpaque},
};
constexpr AttrSpec kMlx5PacketReformat[] = {
    {MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_HANDLE, "handle", K::kIdrNew},
    {MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_TYPE, "type", K::kOpaque},
    {MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_FT_TYPE, "ft_type", K::kOpaque},
    {MLX5_IB_ATTR_CREATE_PACKET_REFORMAT_DATA_BUF, "data_buf", K::kOpaque},
};
constexpr AttrSpec kMlx5PdQuery[] = {
    {MLX5_IB_ATTR_QUERY_PD_HANDLE, "pd", K::kOpaque},
    {MLX5_IB_ATTR_QUERY_PD_RESP_PDN, "pdn", K::kOpaque},
};
constexpr AttrSpec kMlx5QueryPort[] = {
    {MLX5_IB_ATTR_QUERY_PORT_PORT_NUM, "port", K::kOpaque},
    {MLX5_IB_ATTR_QUERY_PORT, "resp", K::kOpaque},
};
constexpr AttrSpec kMlx5DataDirectPath[] = {
    {kNs, "path", K::kOpaque},  // MLX5_IB_ATTR_GET_DATA_DIRECT_SYSFS_PATH
};

constexpr MethodSpec kMlx5Methods[] = {
    {MLX5_IB_OBJECT_DEVX, MLX5_IB_METHOD_DEVX_OTHER, "MLX5_DEVX_OTHER", kMlx5DevxOther},
    {MLX5_IB_OBJECT_DEVX, MLX5_IB_METHOD_DEVX_QUERY_UAR, "MLX5_DEVX_QUERY_UAR", kMlx5DevxQueryUar},
    {MLX5_IB_OBJECT_DEVX, MLX5_IB_METHOD_DEVX_QUERY_EQN, "MLX5_DEVX_QUERY_EQN", kMlx5DevxQueryEqn},
    {MLX5_IB_OBJECT_DEVX, MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT, "MLX5_DEVX_SUBSCRIBE_EVENT",
     kMlx5DevxSubscribe},
    {MLX5_IB_OBJECT_DEVX_OBJ, MLX5_IB_METHOD_DEVX_OBJ_CREATE, "MLX5_DEVX_OBJ_CREATE",
     kMlx5DevxObjCreate},
    {MLX5_IB_OBJECT_DEVX_OBJ, MLX5_IB_METHOD_DEVX_OBJ_DESTROY, "MLX5_DEVX_OBJ_DESTROY",
     kMlx5DevxObjDestroy},
    {MLX5_IB_OBJECT_DEVX_OBJ, MLX5_IB_METHOD_DEVX_OBJ_MODIFY, "MLX5_DEVX_OBJ_MODIFY",
     kMlx5DevxObjModify},
    {MLX5_IB_OBJECT_DEVX_OBJ, MLX5_IB_METHOD_DEVX_OBJ_QUERY, "MLX5_DEVX_OBJ_QUERY",
     kMlx5DevxObjQuery},
    {MLX5_IB_OBJECT_DEVX_OBJ, MLX5_IB_METHOD_DEVX_OBJ_ASYNC_QUERY, "MLX5_DEVX_OBJ_ASYNC_QUERY",
     kMlx5DevxObjAsyncQuery},
    {MLX5_IB_OBJECT_DEVX_UMEM, MLX5_IB_METHOD_DEVX_UMEM_REG, "MLX5_DEVX_UMEM_REG", kMlx5UmemReg},
    {MLX5_IB_OBJECT_DEVX_UMEM, MLX5_IB_METHOD_DEVX_UMEM_DEREG, "MLX5_DEVX_UMEM_DEREG",
     kMlx5UmemDereg},
    {MLX5_IB_OBJECT_FLOW_MATCHER, MLX5_IB_METHOD_FLOW_MATCHER_CREATE, "MLX5_FLOW_MATCHER_CREATE",
     kMlx5FlowMatcherCreate},
    {MLX5_IB_OBJECT_FLOW_MATCHER, MLX5_IB_METHOD_FLOW_MATCHER_DESTROY, "MLX5_FLOW_MATCHER_DESTROY",
     kMlx5FlowMatcherDestroy},
    {MLX5_IB_OBJECT_DEVX_ASYNC_CMD_FD, MLX5_IB_METHOD_DEVX_ASYNC_CMD_FD_ALLOC,
     "MLX5_DEVX_ASYNC_CMD_FD_ALLOC", kMlx5AsyncCmdFdAlloc},
    {MLX5_IB_OBJECT_DEVX_ASYNC_EVENT_FD, MLX5_IB_METHOD_DEVX_ASYNC_EVENT_FD_ALLOC,
     "MLX5_DEVX_ASYNC_EVENT_FD_ALLOC", kMlx5AsyncEventFdAlloc},
    {MLX5_IB_OBJECT_VAR, MLX5_IB_METHOD_VAR_OBJ_ALLOC, "MLX5_VAR_OBJ_ALLOC", kMlx5VarAlloc},
    {MLX5_IB_OBJECT_VAR, MLX5_IB_METHOD_VAR_OBJ_DESTROY, "MLX5_VAR_OBJ_DESTROY", kMlx5VarDestroy},
    {MLX5_IB_OBJECT_PP, MLX5_IB_METHOD_PP_OBJ_ALLOC, "MLX5_PP_OBJ_ALLOC", kMlx5PpAlloc},
    {MLX5_IB_OBJECT_PP, MLX5_IB_METHOD_PP_OBJ_DESTROY, "MLX5_PP_OBJ_DESTROY", kMlx5PpDestroy},
    {MLX5_IB_OBJECT_UAR, MLX5_IB_METHOD_UAR_OBJ_ALLOC, "MLX5_UAR_OBJ_ALLOC", kMlx5UarAlloc},
    {MLX5_IB_OBJECT_UAR, MLX5_IB_METHOD_UAR_OBJ_DESTROY, "MLX5_UAR_OBJ_DESTROY", kMlx5UarDestroy},
    {MLX5_IB_OBJECT_STEERING_ANCHOR, MLX5_IB_METHOD_STEERING_ANCHOR_CREATE,
     "MLX5_STEERING_ANCHOR_CREATE", kMlx5AnchorCreate},
    {MLX5_IB_OBJECT_STEERING_ANCHOR, MLX5_IB_METHOD_STEERING_ANCHOR_DESTROY,
     "MLX5_STEERING_ANCHOR_DESTROY", kMlx5AnchorDestroy},
    {UVERBS_OBJECT_DM, MLX5_IB_METHOD_DM_MAP_OP_ADDR, "MLX5_DM_MAP_OP_ADDR", kMlx5DmMapOpAddr},
    {UVERBS_OBJECT_DM, MLX5_IB_METHOD_DM_QUERY, "MLX5_DM_QUERY", kMlx5DmQuery},
    {UVERBS_OBJECT_FLOW, MLX5_IB_METHOD_CREATE_FLOW, "MLX5_CREATE_FLOW", kMlx5CreateFlow},
    // Flows are destroyed through the core FLOW.DESTROY_FLOW; the library never calls this one.
    {UVERBS_OBJECT_FLOW, MLX5_IB_METHOD_DESTROY_FLOW, "MLX5_DESTROY_FLOW", kMlx5DestroyFlow, false},
    {UVERBS_OBJECT_FLOW_ACTION, MLX5_IB_METHOD_FLOW_ACTION_CREATE_MODIFY_HEADER,
     "MLX5_FLOW_ACTION_CREATE_MODIFY_HEADER", kMlx5ModifyHeader},
    {UVERBS_OBJECT_FLOW_ACTION, MLX5_IB_METHOD_FLOW_ACTION_CREATE_PACKET_REFORMAT,
     "MLX5_FLOW_ACTION_CREATE_PACKET_REFORMAT", kMlx5PacketReformat},
    {UVERBS_OBJECT_PD, MLX5_IB_METHOD_PD_QUERY, "MLX5_PD_QUERY", kMlx5PdQuery},
    {UVERBS_OBJECT_DEVICE, MLX5_IB_METHOD_QUERY_PORT, "MLX5_QUERY_PORT", kMlx5QueryPort},
    // MLX5_IB_METHOD_GET_DATA_DIRECT_SYSFS_PATH
    {UVERBS_OBJECT_DEVICE, MLX5_IB_METHOD_QUERY_PORT + 1, "MLX5_GET_DATA_DIRECT_SYSFS_PATH",
     kMlx5DataDirectPath},
};

constexpr AttrSpec kMlx5FlowActionEsp[] = {
    {MLX5_IB_ATTR_CREATE_FLOW_ACTION_FLAGS, "mlx5_flags", K::kOpaque}};
constexpr AttrSpec kMlx5AllocDm[] = {
    {MLX5_IB_ATTR_ALLOC_DM_RESP_START_OFFSET, "mlx5_start_offset", K::kOpaque},
    {MLX5_IB_ATTR_ALLOC_DM_RESP_PAGE_INDEX, "mlx5_page_index", K::kOpaque},
    {MLX5_IB_ATTR_ALLOC_DM_REQ_TYPE, "mlx5_type", K::kOpaque},
};
constexpr AttrSpec kMlx5QueryContext[] = {
    {MLX5_IB_ATTR_QUERY_CONTEXT_RESP_UCTX, "mlx5_uctx", K::kOpaque}};
constexpr AttrSpec kMlx5CreateCq[] = {
    {kNsWithUhw, "mlx5_uar_index", K::kOpaque},         // MLX5_IB_ATTR_CREATE_CQ_UAR_INDEX
    {kNsWithUhw + 1, "mlx5_dbr_buf_umem", K::kOpaque},  // MLX5_IB_ATTR_CREATE_CQ_DBR_BUF_UMEM
};
constexpr AttrSpec kMlx5CreateQp[] = {
    {kNsWithUhw, "mlx5_dbr_buf_umem", K::kOpaque},  // MLX5_IB_ATTR_CREATE_QP_DBR_BUF_UMEM
};
constexpr AttrSpec kMlx5RegDmabufMr[] = {
    {kNs, "mlx5_access_flags", K::kOpaque},  // MLX5_IB_ATTR_REG_DMABUF_MR_ACCESS_FLAGS
};
constexpr DriverAttrs kMlx5DriverAttrs[] = {
    {UVERBS_OBJECT_FLOW_ACTION, UVERBS_METHOD_FLOW_ACTION_ESP_CREATE, kMlx5FlowActionEsp},
    {UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC, kMlx5AllocDm},
    {UVERBS_OBJECT_DEVICE, UVERBS_METHOD_QUERY_CONTEXT, kMlx5QueryContext},
    {UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE, kMlx5CreateCq},
    {UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE, kMlx5CreateQp},
    {UVERBS_OBJECT_MR, UVERBS_METHOD_REG_DMABUF_MR, kMlx5RegDmabufMr},
};

// ---- efa (efa-abi.h) ---------------------------------------------------------------------------

constexpr AttrSpec kEfaQueryMr[] = {
    {kNs + 0, "mr", K::kOpaque},               // EFA_IB_ATTR_QUERY_MR_HANDLE
    {kNs + 1, "ic_id_validity", K::kOpaque},   // ..._RESP_IC_ID_VALIDITY
    {kNs + 2, "recv_ic_id", K::kOpaque},       // ..._RESP_RECV_IC_ID
    {kNs + 3, "rdma_read_ic_id", K::kOpaque},  // ..._RESP_RDMA_READ_IC_ID
    {kNs + 4, "rdma_recv_ic_id", K::kOpaque},  // ..._RESP_RDMA_RECV_IC_ID
};
constexpr MethodSpec kEfaMethods[] = {
    {UVERBS_OBJECT_MR, kNs, "EFA_MR_QUERY", kEfaQueryMr},  // EFA_IB_METHOD_MR_QUERY
};

// ---- bnxt_re (bnxt_re-abi.h) -------------------------------------------------------------------

constexpr uint16_t kBnxtAllocPage = kNs + 0;   // BNXT_RE_OBJECT_ALLOC_PAGE
constexpr uint16_t kBnxtNotifyDrv = kNs + 1;   // BNXT_RE_OBJECT_NOTIFY_DRV
constexpr uint16_t kBnxtToggleMem = kNs + 2;   // BNXT_RE_OBJECT_GET_TOGGLE_MEM
constexpr uint16_t kBnxtDbr = kNs + 3;         // BNXT_RE_OBJECT_DBR
constexpr uint16_t kBnxtDefaultDbr = kNs + 4;  // BNXT_RE_OBJECT_DEFAULT_DBR
constexpr ObjectSpec kBnxtObjects[] = {
    {kBnxtAllocPage, "BNXT_RE_ALLOC_PAGE"},     {kBnxtNotifyDrv, "BNXT_RE_NOTIFY_DRV"},
    {kBnxtToggleMem, "BNXT_RE_GET_TOGGLE_MEM"}, {kBnxtDbr, "BNXT_RE_DBR"},
    {kBnxtDefaultDbr, "BNXT_RE_DEFAULT_DBR"},
};
constexpr AttrSpec kBnxtAllocPageAttrs[] = {
    {kNs + 0, "handle", K::kIdrNew},       // BNXT_RE_ALLOC_PAGE_HANDLE
    {kNs + 1, "type", K::kOpaque},         // BNXT_RE_ALLOC_PAGE_TYPE
    {kNs + 2, "dpi", K::kOpaque},          // BNXT_RE_ALLOC_PAGE_DPI
    {kNs + 3, "mmap_offset", K::kOpaque},  // BNXT_RE_ALLOC_PAGE_MMAP_OFFSET
    {kNs + 4, "mmap_length", K::kOpaque},  // BNXT_RE_ALLOC_PAGE_MMAP_LENGTH
};
constexpr AttrSpec kBnxtDestroyPage[] = {{kNs, "handle", K::kIdrDestroy}};
constexpr AttrSpec kBnxtToggleMemAttrs[] = {
    {kNs + 0, "handle", K::kIdrNew},       // BNXT_RE_TOGGLE_MEM_HANDLE
    {kNs + 1, "type", K::kOpaque},         // BNXT_RE_TOGGLE_MEM_TYPE
    {kNs + 2, "res_id", K::kOpaque},       // BNXT_RE_TOGGLE_MEM_RES_ID
    {kNs + 3, "mmap_page", K::kOpaque},    // BNXT_RE_TOGGLE_MEM_MMAP_PAGE
    {kNs + 4, "mmap_offset", K::kOpaque},  // BNXT_RE_TOGGLE_MEM_MMAP_OFFSET
    {kNs + 5, "mmap_length", K::kOpaque},  // BNXT_RE_TOGGLE_MEM_MMAP_LENGTH
};
constexpr AttrSpec kBnxtReleaseToggleMem[] = {{kNs, "handle", K::kIdrDestroy}};
constexpr AttrSpec kBnxtDbrAlloc[] = {
    {kNs + 0, "handle", K::kIdrNew},  // BNXT_RE_ALLOC_DBR_HANDLE
    {kNs + 1, "attr", K::kOpaque},    // BNXT_RE_ALLOC_DBR_ATTR
    {kNs + 2, "offset", K::kOpaque},  // BNXT_RE_ALLOC_DBR_OFFSET
};
constexpr AttrSpec kBnxtDbrFree[] = {{kNs, "handle", K::kIdrDestroy}};
constexpr AttrSpec kBnxtDefaultDbrAttrs[] = {{kNs, "attr", K::kOpaque}};
constexpr MethodSpec kBnxtMethods[] = {
    {kBnxtAllocPage, kNs + 0, "BNXT_RE_ALLOC_PAGE", kBnxtAllocPageAttrs},
    {kBnxtAllocPage, kNs + 1, "BNXT_RE_DESTROY_PAGE", kBnxtDestroyPage, false},
    {kBnxtNotifyDrv, kNs + 0, "BNXT_RE_NOTIFY_DRV", {}},  // no attributes
    {kBnxtToggleMem, kNs + 0, "BNXT_RE_GET_TOGGLE_MEM", kBnxtToggleMemAttrs},
    {kBnxtToggleMem, kNs + 1, "BNXT_RE_RELEASE_TOGGLE_MEM", kBnxtReleaseToggleMem, false},
    {kBnxtDbr, kNs + 0, "BNXT_RE_DBR_ALLOC", kBnxtDbrAlloc, false},
    {kBnxtDbr, kNs + 1, "BNXT_RE_DBR_FREE", kBnxtDbrFree, false},
    {kBnxtDefaultDbr, kNs + 2, "BNXT_RE_GET_DEFAULT_DBR", kBnxtDefaultDbrAttrs, false},
};
constexpr AttrSpec kBnxtCreateQp[] = {
    {kNsWithUhw, "bnxt_re_dbr_handle", K::kOpaque}};  // BNXT_RE_CREATE_QP_ATTR_DBR_HANDLE
constexpr DriverAttrs kBnxtDriverAttrs[] = {
    {UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE, kBnxtCreateQp}};

// ---- every provider ----------------------------------------------------------------------------
// Providers whose uapi header declares no driver-namespace id (mlx4, irdma, hns, mana, erdma,
// qedr, vmw_pvrdma, siw, rxe, ionic, ...) talk to their kernel driver only through the core
// methods' driver_in/driver_out data: they are listed so that a device of theirs is a known
// provider, and any driver-namespace id on it stays a number (and unknown to the policy).

template <typename T>
constexpr std::span<const T> none() {
  return {};
}

constexpr ProviderSpec kProviders[] = {
    {RDMA_DRIVER_MLX5, "mlx5", kMlx5Objects, kMlx5Methods, kMlx5DriverAttrs},
    {RDMA_DRIVER_MLX4, "mlx4", none<ObjectSpec>(), none<MethodSpec>(), none<DriverAttrs>()},
    {RDMA_DRIVER_CXGB4, "cxgb4", none<ObjectSpec>(), none<MethodSpec>(), none<DriverAttrs>()},
    {RDMA_DRIVER_MTHCA, "mthca", none<ObjectSpec>(), none<MethodSpec>(), none<DriverAttrs>()},
    {RDMA_DRIVER_BNXT_RE, "bnxt_re", kBnxtObjects, kBnxtMethods, kBnxtDriverAttrs},
    {RDMA_DRIVER_OCRDMA, "ocrdma", none<ObjectSpec>(), none<MethodSpec>(), none<DriverAttrs>()},
    {RDMA_DRIVER_IRDMA, "irdma", none<ObjectSpec>(), none<MethodSpec>(), none<DriverAttrs>()},
    {RDMA_DRIVER_VMW_PVRDMA, "vmw_pvrdma", none<ObjectSpec>(), none<MethodSpec>(),
     none<DriverAttrs>()},
    {RDMA_DRIVER_QEDR, "qedr", none<ObjectSpec>(), none<MethodSpec>(), none<DriverAttrs>()},
    {RDMA_DRIVER_HNS, "hns", none<ObjectSpec>(), none<MethodSpec>(), none<DriverAttrs>()},
    {RDMA_DRIVER_USNIC, "usnic", none<ObjectSpec>(), none<MethodSpec>(), none<DriverAttrs>()},
    {RDMA_DRIVER_RXE, "rxe", none<ObjectSpec>(), none<MethodSpec>(), none<DriverAttrs>()},
    {RDMA_DRIVER_HFI1, "hfi1", none<ObjectSpec>(), none<MethodSpec>(), none<DriverAttrs>()},
    {RDMA_DRIVER_QIB, "qib", none<ObjectSpec>(), none<MethodSpec>(), none<DriverAttrs>()},
    {RDMA_DRIVER_EFA, "efa", none<ObjectSpec>(), kEfaMethods, none<DriverAttrs>()},
    {RDMA_DRIVER_SIW, "siw", none<ObjectSpec>(), none<MethodSpec>(), none<DriverAttrs>()},
    {RDMA_DRIVER_ERDMA, "erdma", none<ObjectSpec>(), none<MethodSpec>(), none<DriverAttrs>()},
    {kRdmaDriverMana, "mana", none<ObjectSpec>(), none<MethodSpec>(), none<DriverAttrs>()},
    {kRdmaDriverIonic, "ionic", none<ObjectSpec>(), none<MethodSpec>(), none<DriverAttrs>()},
};

}  // namespace

std::span<const ProviderSpec> all_providers() {
  return kProviders;
}

GDRPROXY_HOT const ProviderSpec* find_provider(uint32_t driver_id) {
  if (driver_id == kProviderUnknown) return nullptr;
  for (const auto& p : kProviders)
    if (p.driver_id == driver_id) return &p;
  return nullptr;
}

const ProviderSpec* find_provider(std::string_view name) {
  for (const auto& p : kProviders)
    if (name == p.name) return &p;
  return nullptr;
}

GDRPROXY_HOT const ObjectSpec* find_object(uint32_t provider, uint16_t id) {
  if (const auto* o = find_object(id)) return o;
  if (id < kDriverNamespace) return nullptr;
  if (const auto* p = find_provider(provider))
    for (const auto& o : p->objects)
      if (o.id == id) return &o;
  return nullptr;
}

GDRPROXY_HOT const MethodSpec* find_method(uint32_t provider, uint16_t object, uint16_t method) {
  if (const auto* m = find_method(object, method)) return m;
  if (object < kDriverNamespace && method < kDriverNamespace) return nullptr;
  if (const auto* p = find_provider(provider))
    for (const auto& m : p->methods)
      if (m.object == object && m.method == method) return &m;
  return nullptr;
}

const MethodSpec* find_provider_method(uint16_t object, std::string_view name,
                                       const ProviderSpec** owner) {
  for (const auto& p : kProviders)
    for (const auto& m : p.methods)
      if (m.object == object && name == m.name) {
        if (owner) *owner = &p;
        return &m;
      }
  return nullptr;
}

const ObjectSpec* find_provider_object(std::string_view name, const ProviderSpec** owner) {
  for (const auto& p : kProviders)
    for (const auto& o : p.objects)
      if (name == o.name) {
        if (owner) *owner = &p;
        return &o;
      }
  return nullptr;
}

GDRPROXY_HOT const AttrSpec* find_driver_attr(uint32_t provider, uint16_t object, uint16_t method,
                                              uint16_t attr) {
  if (attr < kDriverNamespace) return nullptr;
  const auto* p = find_provider(provider);
  if (!p) return nullptr;
  for (const auto& d : p->driver_attrs) {
    if (d.object != object || d.method != method) continue;
    for (const auto& a : d.attrs)
      if (a.id == attr) return &a;
  }
  return nullptr;
}

}  // namespace gdrproxy::proxy::uverbs
