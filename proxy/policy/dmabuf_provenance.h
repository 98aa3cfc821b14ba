// The dma-buf provenance rule (GPUDirect): a uverbs call that hands the device dma-bufs
// (REG_DMABUF_MR's, REG_MR's fd, a CQ's or QP's buffer, mlx5's DEVX_UMEM_REG) runs only when each
// was exported by one of the policy's `dmabuf_exporters` (by default the NVIDIA driver's). The
// idea not to miss: the rule judges the exporter, and that suffices because every GPU the sandbox
// can reach is a granted one (broker, Landlock), so an NVIDIA dma-buf in its hands was exported
// by a granted GPU. What an fd is comes from the mechanism (proxy/gpudirect/dmabuf_check.h, as a
// DmabufVerdict); what that means for the call is decided here, after the policy's own verdict.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "proxy/decode/decoded_call.h"
#include "proxy/gpudirect/dmabuf_verdict.h"
#include "proxy/policy/policy.h"

namespace gdrproxy::proxy {

// The exporters a uverbs call's dma-bufs may come from; empty: the policy checks none.
std::vector<std::string> dmabuf_exporters(const Policy& policy);

// The provenance of the dma-bufs a call hands the device, each asked of `check` (fd to
// DmabufVerdict, against `exporters`): nullopt when it hands none or `exporters` is empty. With
// two (a QP's send and receive buffers), the second is asked only if the first passes, so the
// verdict is the first that fails, else the last.
template <typename Check>
std::optional<DmabufVerdict> dmabuf_provenance(const PolicyKeys& keys,
                                               const std::vector<std::string>& exporters,
                                               Check&& check) {
  if (!keys.dmabuf_fd || exporters.empty()) return std::nullopt;
  std::optional<DmabufVerdict> v = check(*keys.dmabuf_fd);
  if (v->allowed && keys.dmabuf_fd2) v = check(*keys.dmabuf_fd2);
  return v;
}

// The rule applied to the policy's verdict `v` on `call`: an allowed call whose dma-buf failed
// is denied (the uverbs class's errno, logged, the reason naming the fd and its exporter); one
// that passed names its dma-buf in the call's arguments when they are rendered (a trace).
void apply_dmabuf_provenance(const Policy& policy, const DmabufVerdict& dmabuf, Verdict& v,
                             DecodedCall& call, bool render);

}  // namespace gdrproxy::proxy
