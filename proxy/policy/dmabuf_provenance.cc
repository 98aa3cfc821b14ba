#include "proxy/policy/dmabuf_provenance.h"

namespace gdrproxy::proxy {

std::vector<std::string> dmabuf_exporters(const Policy& policy) {
  const ClassPolicy* uverbs = policy.class_policy(DeviceClass::kUverbs);
  return uverbs ? uverbs->dmabuf_exporters : std::vector<std::string>{};
}

void apply_dmabuf_provenance(const Policy& policy, const DmabufVerdict& dmabuf, Verdict& v,
                             DecodedCall& call, bool render) {
  if (v.action != Action::kAllow) return;
  if (!dmabuf.allowed) {
    v.action = Action::kDeny;
    const ClassPolicy* uverbs = policy.class_policy(DeviceClass::kUverbs);
    v.err = uverbs ? uverbs->err : 1;  // EPERM
    v.log = true;
    v.reason = "uverbs dma-buf provenance: " + dmabuf.reason;
  } else if (render) {
    call.args.push_back({"dmabuf", dmabuf.reason});
  }
}

}  // namespace gdrproxy::proxy
