// The rdma_cm (ucma) command ABI as data. rdma_cm commands are not ioctls: librdmacm write()s a
// struct rdma_ucm_cmd_hdr followed by the command's struct to /dev/infiniband/rdma_cm. Numbers
// and layouts come from rdma/rdma_user_cm.h. gdrproxy observes these writes for the trace (BPF,
// observe/); it cannot police them (see README, Security model).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace gdrproxy::proxy::rdma_cm {

inline constexpr uint32_t kHeaderSize = 8;  // sizeof(struct rdma_ucm_cmd_hdr)

struct CmdSpec {
  uint32_t cmd;
  const char* name;  // e.g. "CREATE_ID", "RESOLVE_ADDR"
  // Offset of the u32 `id` field in the command struct, or -1 when it has none.
  int id_offset;
};

const CmdSpec* find_cmd(uint32_t cmd);
const CmdSpec* find_cmd(std::string_view name);
std::span<const CmdSpec> all_cmds();

}  // namespace gdrproxy::proxy::rdma_cm
