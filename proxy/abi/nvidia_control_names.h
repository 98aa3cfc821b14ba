// The name of an RM control under one release, wherever the driver answers it from: its class's
// exported method table, the deprecated commands it converts, a control an SDK header names
// outside the method tables, and the commands it forwards as is to the GPU's firmware. The one
// idea: the open SDK names most forwarded commands only by their interface (g_finn_rm_api.h's
// FINN_<CLASS>_<CATEGORY>_INTERFACE_ID), so such a command is named by that interface, the
// forwarding bits it carries and its message number, e.g. 0x2080852e is
// NV20_SUBDEVICE_0_THERMAL_GSS_LEGACY_MSG_2E; a trace or refusal line never says "unknown" for a
// control the release answers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/abi/nvidia_abi.h"

namespace gdrproxy::proxy {

// The control's name under `abi`'s release; empty when the release neither exports, converts,
// names nor forwards it.
std::string nvidia_control_name(const NvidiaDriverAbi& abi, uint32_t cmd);

// The number of the control `name` names under the release of `t`, as nvidia_control_name
// names it (exported, deprecated, SDK-named or forwarded), so that a policy rule can name any
// control a trace shows; nullopt when none has that name.
std::optional<uint32_t> nvidia_control_number(const NvGenTables& t, std::string_view name);

}  // namespace gdrproxy::proxy
