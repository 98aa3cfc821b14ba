// Parsing the runtime shim's runtime.json and a bundle's linux.devices (see runtime_config.h).
#include "proxy/oci/runtime_config.h"

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/escape.h"
#include "base/file_io.h"
#include "base/json_field_error.h"
#include "proxy/devices/device_catalog.h"
#include "proxy/oci/oci_device_number.h"

namespace gdrproxy::proxy {
namespace {

using json = nlohmann::json;

}  // namespace

ShimConfig parse_shim_config(std::string_view text, const std::string& origin) {
  ShimConfig c;
  const json j = json::parse(text, nullptr, false);
  auto bad = [&](std::string_view field, std::string_view what) {
    throw json_field_error(origin, field, what);
  };
  if (j.is_discarded() || !j.is_object()) bad("", "not a JSON object");
  for (const auto& [k, v] : j.items())
    if (k != "version" && k != "runtime" && k != "listener" && k != "grants" && k != "base" &&
        k != "metadata" && k != "sysfs" && k != "sysfs_root" && k != "comment" && k != "rails" &&
        k != "rail_profile" && k != "allow_plain_rails" && k != "rail_state_dir" &&
        k != "kernel_allow" && k != "lsm_judged" && k != "lsm_hook" && k != "agent_ctl" &&
        k != "policy" && k != "nvidia_abi_as" && k != "accept_unconfined" &&
        // Kept for existing files: pidfd_getfd is always trapped now, and the agent's rule
        // decides whether it is brokered, so this key has no effect.
        k != "broker_pidfd_getfd")
      bad(k, "unknown key");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"] != 1)
    bad("version", "expected 1");
  auto str = [&](const char* k, std::string& out) {
    if (!j.contains(k)) return;
    if (!j[k].is_string()) bad(k, "expected a string");
    out = j[k].get<std::string>();
  };
  str("runtime", c.runtime);
  str("listener", c.listener);
  std::string s;
  if (j.contains("base")) c.base = (str("base", s), s);
  if (j.contains("metadata")) c.metadata = (str("metadata", s), s);
  if (j.contains("grants")) {
    if (!j["grants"].is_array()) bad("grants", "expected an array of device names or globs");
    for (const json& g : j["grants"]) {
      if (!g.is_string()) bad("grants", "expected an array of device names or globs");
      c.grants.push_back(g.get<std::string>());
    }
  }
  auto boolean = [&](const char* k, bool& out) {
    if (!j.contains(k)) return;
    if (!j[k].is_boolean()) bad(k, "expected true or false");
    out = j[k].get<bool>();
  };
  boolean("sysfs", c.sysfs);
  str("sysfs_root", c.sysfs_root);
  boolean("rails", c.rails);
  str("rail_profile", c.rail_profile);
  boolean("allow_plain_rails", c.allow_plain_rails);
  if (j.contains("rail_state_dir")) c.rail_state_dir = (str("rail_state_dir", s), s);
  boolean("kernel_allow", c.kernel_allow);
  boolean("lsm_judged", c.lsm_judged);
  if (c.lsm_judged && !c.kernel_allow) bad("", "\"lsm_judged\" goes with \"kernel_allow\": true");
  boolean("lsm_hook", c.lsm_hook);
  c.lsm_hook = c.lsm_hook || c.lsm_judged;
  str("agent_ctl", c.agent_ctl);
  if (j.contains("policy")) c.policy = (str("policy", s), s);
  if (j.contains("nvidia_abi_as")) {
    c.nvidia_abi_as = (str("nvidia_abi_as", s), s);
    if (s.empty()) bad("nvidia_abi_as", "expected a driver release, e.g. \"595.45.04\"");
  }
  boolean("accept_unconfined", c.accept_unconfined);
  c.found = true;
  return c;
}

ShimConfig load_shim_config(const std::string& path) {
  const std::optional<std::string> text = read_text(path, kWholeFile);
  if (!text) return ShimConfig{};  // no file: no device may be granted
  return parse_shim_config(*text, path);
}

std::vector<std::string> requested_devices(std::string_view config_json, const std::string& origin,
                                           const std::function<const DeviceCatalog&()>& catalog) {
  const json j = json::parse(config_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw Error(origin + " is not a JSON object");
  std::vector<std::string> out;
  if (!j.contains("linux") || !j["linux"].contains("devices") || !j["linux"]["devices"].is_array())
    return out;
  for (const json& d : j["linux"]["devices"]) {
    const std::optional<dev_t> dev = oci_char_device_number(d, origin);
    if (!dev) continue;
    const DeviceNode* n = catalog().find(*dev);
    if (!n) continue;
    if (!n->brokerable)
      throw Error("linux.devices holds " + printable(n->path) + ", which can never be granted");
    out.push_back(n->name);
  }
  return out;
}

}  // namespace gdrproxy::proxy
