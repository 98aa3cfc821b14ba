// Judging a config.json unconfined (see container_privilege.h).
#include "proxy/oci/container_privilege.h"

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/escape.h"
#include "base/lists.h"

namespace gdrproxy::proxy {
namespace {

using json = nlohmann::json;

// A rule that lets every character device be read or written: allow, type absent, "a" or "c",
// no major and no minor (or -1, runc's wildcard), and an access with r or w (absent: rwm).
// Docker's default {"allow": true, "type": "c", "access": "m"} (mknod only) is not one.
bool allows_every_char_device(const json& rule) {
  if (!rule.is_object() || !rule.value("allow", false)) return false;
  const std::string type = rule.contains("type") && rule["type"].is_string()
                               ? rule["type"].get<std::string>()
                               : std::string("a");
  if (type != "a" && type != "c") return false;
  auto wildcard = [&](const char* k) {
    return !rule.contains(k) || rule[k].is_null() || (rule[k].is_number_integer() && rule[k] == -1);
  };
  if (!wildcard("major") || !wildcard("minor")) return false;
  const std::string access = rule.contains("access") && rule["access"].is_string()
                                 ? rule["access"].get<std::string>()
                                 : std::string("rwm");
  return access.find_first_of("rw") != std::string::npos;
}

bool holds_cap(const json& caps, std::string_view cap) {
  if (!caps.is_object()) return false;
  for (const char* set : {"bounding", "effective", "permitted", "inheritable", "ambient"}) {
    if (!caps.contains(set) || !caps[set].is_array()) continue;
    for (const json& c : caps[set])
      if (c.is_string() && c.get<std::string>() == cap) return true;
  }
  return false;
}

}  // namespace

std::string Unconfinement::joined() const {
  return join_list(reasons, "; ");
}

Unconfinement container_unconfinement(std::string_view config_json, const std::string& origin) {
  const json j = json::parse(config_json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw Error(origin + " is not a JSON object");
  Unconfinement u;
  const json linux = j.contains("linux") && j["linux"].is_object() ? j["linux"] : json::object();
  if (linux.contains("namespaces") && linux["namespaces"].is_array())
    for (const json& ns : linux["namespaces"])
      if (ns.is_object() && ns.value("type", "") == "user") return u;

  bool allow_all = false;
  if (linux.contains("resources") && linux["resources"].is_object() &&
      linux["resources"].contains("devices") && linux["resources"]["devices"].is_array()) {
    // The kernel applies the rules in order: an allow-all rule counts unless a later deny-all
    // rule takes it back.
    for (const json& rule : linux["resources"]["devices"]) {
      if (allows_every_char_device(rule)) allow_all = true;
      if (rule.is_object() && !rule.value("allow", true) && !rule.contains("major") &&
          !rule.contains("minor") && rule.value("type", "a") == "a")
        allow_all = false;
    }
  }
  if (allow_all)
    u.reasons.push_back("the device cgroup allows every device (linux.resources.devices)");
  const json caps =
      j.contains("process") && j["process"].is_object() && j["process"].contains("capabilities")
          ? j["process"]["capabilities"]
          : json::object();
  for (std::string_view cap : kUnconfiningCaps)
    if (holds_cap(caps, cap)) u.reasons.push_back(std::string(cap));
  if (allow_all && holds_cap(caps, "CAP_MKNOD")) u.reasons.push_back("CAP_MKNOD");
  if (!u.reasons.empty()) u.reasons.push_back("no user namespace");
  return u;
}

std::string unconfined_refusal(const Unconfinement& u, const std::string& devices) {
  return "the container is privileged (" + u.joined() + ") and asks for " + printable(devices) +
         ": such a container can undo every guard on its devices. Drop \"privileged\" "
         "(securityContext.privileged, docker --privileged) and the capabilities named; add "
         "CAP_IPC_LOCK for pinned memory (CAP_NET_RAW for raw sockets), which are fine; or set "
         "\"accept_unconfined\": true in runtime.json to start such containers anyway";
}

}  // namespace gdrproxy::proxy
