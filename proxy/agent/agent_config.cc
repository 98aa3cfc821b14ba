// Loading and matching of the agent's container rules. Every key is checked: an unknown key or a
// value of the wrong type is refused with the file and the field named, because a typo in this
// file would otherwise hand a container devices it should not have, or none it should.
#include "proxy/agent/agent_config.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "base/error.h"
#include "base/file_io.h"
#include "base/json_field_error.h"
#include "proxy/policy/glob.h"

namespace gdrproxy::proxy {
namespace {

using json = nlohmann::json;

void only_keys(const json& j, const std::string& origin, const std::string& where,
               std::initializer_list<const char*> keys) {
  for (const auto& [k, v] : j.items()) {
    bool known = false;
    for (const char* key : keys) known = known || k == key;
    if (!known) throw json_field_error(origin, where + k, "unknown key");
  }
}

std::optional<std::string> opt_string(const json& j, const char* key, const std::string& origin,
                                      const std::string& where) {
  if (!j.contains(key)) return std::nullopt;
  if (!j[key].is_string()) throw json_field_error(origin, where + key, "expected a string");
  return j[key].get<std::string>();
}

ContainerRule parse_rule(const json& j, const std::string& origin, const std::string& where) {
  if (!j.is_object()) throw json_field_error(origin, where, "expected an object");
  only_keys(j, origin, where + ".",
            {"match", "grants", "grants_from_metadata", "policy", "mode", "trace",
             "broker_pidfd_getfd", "pidfd_getfd_group", "comment"});
  ContainerRule r;
  r.origin = where;
  if (j.contains("match")) {
    const json& m = j["match"];
    if (!m.is_object()) throw json_field_error(origin, where + ".match", "expected an object");
    only_keys(m, origin, where + ".match.", {"id", "bundle", "metadata"});
    r.id = opt_string(m, "id", origin, where + ".match.");
    r.bundle = opt_string(m, "bundle", origin, where + ".match.");
    r.metadata = opt_string(m, "metadata", origin, where + ".match.");
  }
  if (j.contains("grants")) {
    const json& g = j["grants"];
    if (!g.is_array())
      throw json_field_error(origin, where + ".grants", "expected an array of device names");
    std::vector<std::string> names;
    for (const json& n : g) {
      if (!n.is_string())
        throw json_field_error(origin, where + ".grants", "expected an array of device names");
      names.push_back(n.get<std::string>());
    }
    r.grants = std::move(names);
  }
  r.policy_file = opt_string(j, "policy", origin, where + ".");
  if (const auto m = opt_string(j, "mode", origin, where + ".")) {
    if (*m == "enforce")
      r.mode = Mode::kEnforce;
    else if (*m == "trace")
      r.mode = Mode::kTrace;
    else
      throw json_field_error(origin, where + ".mode", "expected \"enforce\" or \"trace\"");
  }
  if (j.contains("trace")) {
    if (!j["trace"].is_boolean())
      throw json_field_error(origin, where + ".trace", "expected true or false");
    r.trace = j["trace"].get<bool>();
  }
  if (j.contains("broker_pidfd_getfd")) {
    if (!j["broker_pidfd_getfd"].is_boolean())
      throw json_field_error(origin, where + ".broker_pidfd_getfd", "expected true or false");
    r.broker_pidfd_getfd = j["broker_pidfd_getfd"].get<bool>();
  }
  if (j.contains("grants_from_metadata")) {
    if (!j["grants_from_metadata"].is_boolean())
      throw json_field_error(origin, where + ".grants_from_metadata", "expected true or false");
    r.grants_from_metadata = j["grants_from_metadata"].get<bool>();
  }
  r.pidfd_getfd_group = opt_string(j, "pidfd_getfd_group", origin, where + ".");
  if (r.pidfd_getfd_group && r.pidfd_getfd_group->empty())
    throw json_field_error(origin, where + ".pidfd_getfd_group", "expected a non-empty group name");
  if (r.pidfd_getfd_group && !r.broker_pidfd_getfd)
    throw json_field_error(origin, where + ".pidfd_getfd_group",
                           "a group needs \"broker_pidfd_getfd\": true");
  return r;
}

bool field_matches(const std::optional<std::string>& pattern, const std::string& value) {
  return !pattern || glob_match(pattern->c_str(), value.c_str());
}

}  // namespace

AgentConfig AgentConfig::from_json_text(const std::string& text, const std::string& origin) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) throw json_field_error(origin, "(file)", "not valid JSON");
  if (!j.is_object()) throw json_field_error(origin, "(file)", "expected a JSON object");
  only_keys(j, origin, "", {"version", "comment", "containers", "default", "nvidia_abi_as"});
  if (!j.contains("version") || j["version"] != 1)
    throw json_field_error(origin, "version", "expected 1");
  AgentConfig c;
  // Without a "default" rule a container no rule matches gets no device.
  c.fallback.grants = std::vector<std::string>{};
  c.fallback.origin = "default";
  if (j.contains("containers")) {
    if (!j["containers"].is_array())
      throw json_field_error(origin, "containers", "expected an array of rules");
    for (size_t i = 0; i < j["containers"].size(); ++i)
      c.containers.push_back(
          parse_rule(j["containers"][i], origin, "containers[" + std::to_string(i) + "]"));
  }
  if (j.contains("nvidia_abi_as")) {
    if (!j["nvidia_abi_as"].is_string() || j["nvidia_abi_as"].get<std::string>().empty())
      throw json_field_error(origin, "nvidia_abi_as",
                             "expected a driver release, e.g. \"595.45.04\"");
    c.nvidia_abi_as = j["nvidia_abi_as"].get<std::string>();
  }
  if (j.contains("default")) {
    c.fallback = parse_rule(j["default"], origin, "default");
    if (c.fallback.id || c.fallback.bundle || c.fallback.metadata)
      throw json_field_error(origin, "default.match",
                             "the default rule matches every container; it has no match");
    if (!c.fallback.grants) c.fallback.grants = std::vector<std::string>{};
  }
  return c;
}

AgentConfig AgentConfig::load_file(const std::string& path) {
  const std::optional<std::string> text = read_text(path, kWholeFile);
  if (!text) throw Error("cannot read agent config " + path);
  return from_json_text(*text, path);
}

const ContainerRule& AgentConfig::rule_for(const std::string& id, const std::string& bundle,
                                           const std::string& metadata) const {
  for (const ContainerRule& r : containers)
    if (field_matches(r.id, id) && field_matches(r.bundle, bundle) &&
        field_matches(r.metadata, metadata))
      return r;
  return fallback;
}

}  // namespace gdrproxy::proxy
