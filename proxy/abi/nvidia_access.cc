// The driver's own privilege rules applied to its generated tables (see nvidia_access.h).
#include "proxy/abi/nvidia_access.h"

#include <algorithm>

#include "base/hex.h"
#include "proxy/abi/nvidia_generated.h"

namespace gdrproxy::proxy {
namespace {

NvRequires control_requires(const NvGenTables& t, uint32_t flags) {
  // control.c: NON_PRIVILEGED anyone; PRIVILEGED at least USER_ROOT; INTERNAL only internal
  // requests; none of the three: kernel clients only (KERNEL_PRIVILEGED is the default, 0).
  if (t.control_has(flags, "INTERNAL")) return NvRequires::kInternal;
  if (t.control_has(flags, "PRIVILEGED")) return NvRequires::kAdmin;
  if (t.control_has(flags, "NON_PRIVILEGED")) return NvRequires::kAnyone;
  return NvRequires::kKernel;
}

}  // namespace

NvControlAccess nvidia_control_access(const NvGenTables& t, uint32_t cmd) {
  NvControlAccess a;
  uint32_t judged = cmd;
  if (const NvGenDeprecated* d = t.find_deprecated(cmd)) {
    a.route = NvRoute::kDeprecated;
    judged = d->target;
  }
  if (const NvGenControl* c = t.find_control(judged)) {
    if (a.route == NvRoute::kNone) a.route = NvRoute::kExported;
    a.control = c;
    a.needs = control_requires(t, c->flags);
    return a;
  }
  if (a.route == NvRoute::kDeprecated) return a;  // converted to nothing this release has
  // entry_points.c asks the deprecated table and then the GSS legacy bit before any class's
  // table; an exported control is judged by its own flags all the same (the stricter reading).
  const uint32_t gss = t.gss_legacy_mask(), gss_priv = t.gss_privileged_mask();
  if (gss && (cmd & gss)) {
    a.route = NvRoute::kFirmwareGss;
    a.needs = gss_priv && (cmd & gss_priv) == gss_priv ? NvRequires::kAdmin : NvRequires::kAnyone;
    return a;
  }
  const uint32_t cls = cmd >> 16;
  if ((cls == kNvClassBinapi || cls == kNvClassBinapiPrivileged) && t.find_class(cls)) {
    a.route = NvRoute::kFirmwareBinapi;
    a.needs = nvidia_class_access(t, cls);
    return a;
  }
  return a;
}

NvRequires nvidia_class_access(const NvGenTables& t, uint32_t class_id) {
  if (std::find(std::begin(kNvClientClasses), std::end(kNvClientClasses), class_id) !=
      std::end(kNvClientClasses))
    return t.find_class(class_id) ? NvRequires::kAnyone : NvRequires::kNotTheDrivers;
  const NvGenClass* c = t.find_class(class_id);
  if (!c) return NvRequires::kNotTheDrivers;
  // alloc_free.c: INTERNAL_ONLY is refused to clients; then ALLOC_PRIVILEGED and
  // ALLOC_KERNEL_PRIVILEGED ask their level; a class with no ALLOC_* flag is refused to all.
  if (t.class_has(c->rs_flags, "INTERNAL_ONLY")) return NvRequires::kInternal;
  if (t.class_has(c->rs_flags, "ALLOC_KERNEL_PRIVILEGED")) return NvRequires::kKernel;
  if (t.class_has(c->rs_flags, "ALLOC_PRIVILEGED")) return NvRequires::kAdmin;
  if (t.class_has(c->rs_flags, "ALLOC_NON_PRIVILEGED")) return NvRequires::kAnyone;
  return NvRequires::kKernel;
}

const char* nv_requires_name(NvRequires r) {
  switch (r) {
    case NvRequires::kAnyone:
      return "anyone";
    case NvRequires::kAdmin:
      return "an administrator";
    case NvRequires::kKernel:
      return "kernel clients";
    case NvRequires::kInternal:
      return "the driver itself";
    case NvRequires::kNotTheDrivers:
      break;
  }
  return "nobody (not the driver's)";
}

std::string nv_route_text(const NvGenTables& t, uint32_t cmd, const NvControlAccess& a) {
  switch (a.route) {
    case NvRoute::kDeprecated: {
      const NvGenDeprecated* d = t.find_deprecated(cmd);
      return std::string("deprecated, converted to ") +
             (a.control ? a.control->name : "a control this release lacks") + "(" +
             hex(d ? d->target : 0) + ")";
    }
    case NvRoute::kFirmwareGss:
      return "forwarded to the GPU firmware (GSS legacy bit " + hex(t.gss_legacy_mask()) +
             (a.needs == NvRequires::kAdmin ? ", privileged bits " + hex(t.gss_privileged_mask())
                                            : std::string()) +
             ")";
    case NvRoute::kFirmwareBinapi:
      return "forwarded to the GPU firmware from a binary-API object";
    case NvRoute::kExported:
    case NvRoute::kNone:
      break;
  }
  return {};
}

}  // namespace gdrproxy::proxy
