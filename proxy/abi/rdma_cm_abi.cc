#include "proxy/abi/rdma_cm_abi.h"

#include <rdma/rdma_user_cm.h>

#include <cstddef>

namespace gdrproxy::proxy::rdma_cm {
namespace {

constexpr CmdSpec kCmds[] = {
    {RDMA_USER_CM_CMD_CREATE_ID, "CREATE_ID", -1},
    {RDMA_USER_CM_CMD_DESTROY_ID, "DESTROY_ID", offsetof(rdma_ucm_destroy_id, id)},
    {RDMA_USER_CM_CMD_BIND_IP, "BIND_IP", offsetof(rdma_ucm_bind_ip, id)},
    {RDMA_USER_CM_CMD_RESOLVE_IP, "RESOLVE_IP", offsetof(rdma_ucm_resolve_ip, id)},
    {RDMA_USER_CM_CMD_RESOLVE_ROUTE, "RESOLVE_ROUTE", offsetof(rdma_ucm_resolve_route, id)},
    {RDMA_USER_CM_CMD_QUERY_ROUTE, "QUERY_ROUTE", offsetof(rdma_ucm_query, id)},
    {RDMA_USER_CM_CMD_CONNECT, "CONNECT", offsetof(rdma_ucm_connect, id)},
    {RDMA_USER_CM_CMD_LISTEN, "LISTEN", offsetof(rdma_ucm_listen, id)},
    {RDMA_USER_CM_CMD_ACCEPT, "ACCEPT", offsetof(rdma_ucm_accept, id)},
    {RDMA_USER_CM_CMD_REJECT, "REJECT", offsetof(rdma_ucm_reject, id)},
    {RDMA_USER_CM_CMD_DISCONNECT, "DISCONNECT", offsetof(rdma_ucm_disconnect, id)},
    {RDMA_USER_CM_CMD_INIT_QP_ATTR, "INIT_QP_ATTR", offsetof(rdma_ucm_init_qp_attr, id)},
    {RDMA_USER_CM_CMD_GET_EVENT, "GET_EVENT", -1},
    {RDMA_USER_CM_CMD_GET_OPTION, "GET_OPTION", -1},
    {RDMA_USER_CM_CMD_SET_OPTION, "SET_OPTION", offsetof(rdma_ucm_set_option, id)},
    {RDMA_USER_CM_CMD_NOTIFY, "NOTIFY", offsetof(rdma_ucm_notify, id)},
    {RDMA_USER_CM_CMD_JOIN_IP_MCAST, "JOIN_IP_MCAST", offsetof(rdma_ucm_join_ip_mcast, id)},
    {RDMA_USER_CM_CMD_LEAVE_MCAST, "LEAVE_MCAST", offsetof(rdma_ucm_destroy_id, id)},
    {RDMA_USER_CM_CMD_MIGRATE_ID, "MIGRATE_ID", offsetof(rdma_ucm_migrate_id, id)},
    {RDMA_USER_CM_CMD_QUERY, "QUERY", offsetof(rdma_ucm_query, id)},
    {RDMA_USER_CM_CMD_BIND, "BIND", offsetof(rdma_ucm_bind, id)},
    {RDMA_USER_CM_CMD_RESOLVE_ADDR, "RESOLVE_ADDR", offsetof(rdma_ucm_resolve_addr, id)},
    {RDMA_USER_CM_CMD_JOIN_MCAST, "JOIN_MCAST", offsetof(rdma_ucm_join_mcast, id)},
};

}  // namespace

const CmdSpec* find_cmd(uint32_t cmd) {
  for (const auto& c : kCmds)
    if (c.cmd == cmd) return &c;
  return nullptr;
}

const CmdSpec* find_cmd(std::string_view name) {
  for (const auto& c : kCmds)
    if (name == c.name) return &c;
  return nullptr;
}

std::span<const CmdSpec> all_cmds() {
  return kCmds;
}

}  // namespace gdrproxy::proxy::rdma_cm
