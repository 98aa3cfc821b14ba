#include "proxy/decode/rdma_cm_decoder.h"

#include <rdma/rdma_user_cm.h>

#include <cstring>

#include "base/hex.h"
#include "proxy/abi/rdma_cm_abi.h"
#include "proxy/decode/format.h"

namespace gdrproxy::proxy {

static_assert(sizeof(rdma_ucm_cmd_hdr) == rdma_cm::kHeaderSize);

DecodedCall decode_rdma_cm_write(uint64_t buf, uint64_t count, const MemoryReader& mem) {
  DecodedCall call;
  call.device_class = DeviceClass::kRdmaCm;
  call.name = "RDMA_CM_WRITE";
  if (count < rdma_cm::kHeaderSize) {
    call.malformed = "write of " + dec(static_cast<int64_t>(count)) +
                     " bytes is shorter than the command header";
    return call;
  }
  rdma_ucm_cmd_hdr hdr;
  if (!mem.read(buf, {reinterpret_cast<uint8_t*>(&hdr), sizeof hdr})) {
    call.malformed = "command header unreadable at " + hex(buf);
    return call;
  }
  call.keys.rdma_cm_cmd = hdr.cmd;
  const auto* spec = rdma_cm::find_cmd(hdr.cmd);
  call.name = spec ? spec->name : "CM_CMD_" + dec(hdr.cmd);
  if (count != rdma_cm::kHeaderSize + hdr.in) {
    call.malformed = "header says " + dec(hdr.in) + " input bytes, write carries " +
                     dec(static_cast<int64_t>(count) - rdma_cm::kHeaderSize);
    return call;
  }
  call.args.push_back({"in", dec(hdr.in)});
  call.args.push_back({"out", dec(hdr.out)});
  if (spec && spec->id_offset >= 0 && hdr.in >= spec->id_offset + 4) {
    uint32_t id;
    if (mem.read(buf + rdma_cm::kHeaderSize + spec->id_offset,
                 {reinterpret_cast<uint8_t*>(&id), 4}))
      call.args.push_back({"id", dec(id)});
  }
  if (hdr.cmd == RDMA_USER_CM_CMD_CREATE_ID && hdr.in >= sizeof(rdma_ucm_create_id)) {
    rdma_ucm_create_id c;
    if (mem.read(buf + rdma_cm::kHeaderSize, {reinterpret_cast<uint8_t*>(&c), sizeof c})) {
      const char* ps = c.ps == RDMA_PS_TCP     ? "TCP"
                       : c.ps == RDMA_PS_UDP   ? "UDP"
                       : c.ps == RDMA_PS_IB    ? "IB"
                       : c.ps == RDMA_PS_IPOIB ? "IPOIB"
                                               : nullptr;
      call.args.push_back({"ps", ps ? ps : hex(c.ps)});
      call.args.push_back({"qp_type", dec(c.qp_type)});
    }
  }
  return call;
}

}  // namespace gdrproxy::proxy
