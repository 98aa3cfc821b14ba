// Who the NVIDIA driver itself lets make an RM call, and where the call goes, read from the
// release's generated tables the way the driver dispatches it (580 sources: control.c,
// alloc_free.c, rmapi_deprecated_control.c, rmapi_gss_legacy_control.c, binary_api.c):
//   - an exported control: its RMCTRL flags (NON_PRIVILEGED anyone, PRIVILEGED an
//     administrator, INTERNAL only the driver itself, none of these only kernel clients);
//   - a deprecated command: converted to its newer control, which is then judged;
//   - a command with the GSS legacy bit, on a GSP-driven GPU: forwarded as is to the GPU's
//     firmware (an administrator's when it carries the privileged bits too);
//   - a command of the binary-API classes (NV2081_BINAPI, NV2082_BINAPI_PRIVILEGED): forwarded
//     as is to the firmware from such an object (the privileged class is an administrator's);
//   - anything else is not the driver's: it answers NV_ERR_NOT_SUPPORTED.
//   - an allocation: the class's RS_FLAGS_ALLOC_* (clients are allocated without that check).
// The one idea: these are facts about the driver, never a decision; the policy decides, and
// reads them from the decoded call's keys.
#pragma once

#include <cstdint>
#include <string>

namespace gdrproxy::proxy {

class NvGenTables;
struct NvGenControl;
struct NvGenClass;

// The least privilege the driver asks of the caller.
enum class NvRequires : uint8_t {
  kAnyone,         // NON_PRIVILEGED, ALLOC_NON_PRIVILEGED, a client, an unprivileged forward
  kAdmin,          // PRIVILEGED, ALLOC_PRIVILEGED, a privileged forward: root in the host's view
  kKernel,         // no privilege flag (the driver's default) or ALLOC_KERNEL_PRIVILEGED
  kInternal,       // INTERNAL / INTERNAL_ONLY: the driver's own calls, never a client's
  kNotTheDrivers,  // the release neither exports nor forwards it
};

// Where an RM_CONTROL goes.
enum class NvRoute : uint8_t {
  kExported,        // the class's own method table
  kDeprecated,      // converted to a newer control first
  kFirmwareGss,     // the GSS legacy bit: forwarded to the GPU's firmware
  kFirmwareBinapi,  // a binary-API class's command: forwarded to the GPU's firmware
  kNone,
};

struct NvControlAccess {
  NvRequires needs = NvRequires::kNotTheDrivers;
  NvRoute route = NvRoute::kNone;
  const NvGenControl* control = nullptr;  // the exported control judged (the target of a
                                          // deprecated command), nullptr for a forward
};

NvControlAccess nvidia_control_access(const NvGenTables& t, uint32_t cmd);
NvRequires nvidia_class_access(const NvGenTables& t, uint32_t class_id);

const char* nv_requires_name(NvRequires r);  // "anyone", "an administrator", ...
// What a refusal line says of a control's route: "", "deprecated, converted to NAME(0x...)",
// "forwarded to the GPU firmware (GSS legacy bit 0x8000)", ...
std::string nv_route_text(const NvGenTables& t, uint32_t cmd, const NvControlAccess& a);

// RM_ALLOC of these classes allocates a client (serverAllocClient), which no RS flag guards:
// NV01_ROOT, NV01_ROOT_NON_PRIV, NV01_ROOT_CLIENT (nvos.h, cl0000.h, cl0001.h, cl0041.h).
inline constexpr uint32_t kNvClientClasses[] = {0x0, 0x1, 0x41};
// The binary-API classes whose objects forward any command to the firmware (binary_api.c).
inline constexpr uint32_t kNvClassBinapi = 0x2081;            // NV2081_BINAPI
inline constexpr uint32_t kNvClassBinapiPrivileged = 0x2082;  // NV2082_BINAPI_PRIVILEGED

}  // namespace gdrproxy::proxy
