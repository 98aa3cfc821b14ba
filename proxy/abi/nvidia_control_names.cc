// Names of RM controls under one release (nvidia_control_names.h).
#include "proxy/abi/nvidia_control_names.h"

#include <cstdio>

#include "proxy/abi/nvidia_access.h"
#include "proxy/abi/nvidia_generated.h"

namespace gdrproxy::proxy {
namespace {

// A forwarded command: its interface's name (the category byte without the forwarding bits), the
// bits, and its message number.
std::string forwarded_name(const NvGenTables& t, uint32_t cmd, const NvControlAccess& a) {
  const uint32_t gss_bits = a.route == NvRoute::kFirmwareGss ? t.gss_privileged_mask() : 0;
  const uint32_t interface_id = (cmd & ~gss_bits) >> 8;
  std::string name;
  if (const NvGenInterface* i = t.find_interface(interface_id)) {
    name = i->name;
  } else {
    // No interface of that category in this release's SDK: the class and the category number.
    const NvGenClass* cls = t.find_class(cmd >> 16);
    if (!cls) return {};
    char category[24];
    std::snprintf(category, sizeof category, "_CATEGORY_%02X", interface_id & 0xff);
    name = std::string(cls->name) + category;
  }
  if (a.route == NvRoute::kFirmwareGss)
    name += a.needs == NvRequires::kAdmin ? "_GSS_LEGACY_PRIVILEGED" : "_GSS_LEGACY";
  char msg[16];
  std::snprintf(msg, sizeof msg, "_MSG_%02X", cmd & 0xff);
  return name + msg;
}

// The name under `t` of a command its exported tables do not name.
std::string unexported_name(const NvGenTables* t, uint32_t cmd) {
  if (!t) return {};
  if (const NvGenDeprecated* d = t->find_deprecated(cmd)) return d->name;
  if (const NvGenCommandName* n = t->find_command_name(cmd)) return n->name;
  const NvControlAccess a = nvidia_control_access(*t, cmd);
  if (a.route == NvRoute::kFirmwareGss || a.route == NvRoute::kFirmwareBinapi)
    return forwarded_name(*t, cmd, a);
  return {};
}

// The message number after "_MSG_" at the end of `name`, when the rest is `prefix`.
std::optional<uint32_t> message_after(std::string_view name, std::string_view prefix) {
  constexpr std::string_view kMsg = "_MSG_";
  if (name.size() != prefix.size() + kMsg.size() + 2 || name.substr(0, prefix.size()) != prefix ||
      name.substr(prefix.size(), kMsg.size()) != kMsg)
    return std::nullopt;
  uint32_t v = 0;
  for (char ch : name.substr(prefix.size() + kMsg.size())) {
    const int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
    if (d < 0) return std::nullopt;
    v = v * 16 + static_cast<uint32_t>(d);
  }
  return v;
}

}  // namespace

std::string nvidia_control_name(const NvidiaDriverAbi& abi, uint32_t cmd) {
  if (const NvControl* c = abi.find_control(cmd)) return c->name;
  return unexported_name(abi.generated, cmd);
}

std::optional<uint32_t> nvidia_control_number(const NvGenTables& t, std::string_view name) {
  if (const NvGenControl* c = t.find_control(name)) return c->cmd;
  for (const NvGenDeprecated* d : t.deprecated())
    if (name == d->name) return d->cmd;
  for (const NvGenCommandName* n : t.command_names())
    if (name == n->name) return n->cmd;
  // A forwarded command: an interface's name, the forwarding bits, its message.
  for (const NvGenInterface* i : t.interfaces()) {
    const std::string_view iface = i->name;
    if (name.substr(0, iface.size()) != iface) continue;
    struct Form {
      const char* suffix;
      uint32_t bits;
    };
    for (const Form f : {Form{"", 0}, Form{"_GSS_LEGACY", t.gss_legacy_mask()},
                         Form{"_GSS_LEGACY_PRIVILEGED", t.gss_privileged_mask()}}) {
      const auto msg = message_after(name, std::string(iface) + f.suffix);
      if (!msg) continue;
      const uint32_t cmd = ((i->id << 8) | *msg) | f.bits;
      // Only a command the release forwards under exactly that name.
      if (unexported_name(&t, cmd) == name) return cmd;
    }
  }
  return std::nullopt;
}

}  // namespace gdrproxy::proxy
