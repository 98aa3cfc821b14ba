#include "proxy/policy/policy.h"

#include <cerrno>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/hot_path.h"
#include "base/json_field_error.h"
#include "proxy/abi/errno_names.h"
#include "proxy/abi/nvidia_abi.h"
#include "proxy/abi/nvidia_control_names.h"
#include "proxy/abi/nvidia_generated.h"
#include "proxy/abi/uverbs_abi.h"
#include "proxy/abi/uverbs_providers.h"
#include "proxy/policy/default_policy.h"
#include "proxy/policy/glob.h"

namespace gdrproxy::proxy {
namespace {

using json = nlohmann::json;

// Every value read from a policy goes through these helpers: a wrong type, a value out of range
// or an unknown key is an error that names the field ("classes.uverbs.log") and what was expected.
std::string describe(const json& v) {
  std::string text = v.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return std::string(v.type_name()) + " " + text;
}

[[noreturn]] void expected(const std::string& where, const std::string& what, const json& got) {
  throw json_field_error("", where, "expected " + what + ", got " + describe(got));
}

std::string as_string(const json& v, const std::string& where) {
  if (!v.is_string()) expected(where, "a string", v);
  return v.get<std::string>();
}

bool as_bool(const json& v, const std::string& where) {
  if (!v.is_boolean()) expected(where, "true or false", v);
  return v.get<bool>();
}

std::vector<std::string> as_string_list(const json& v, const std::string& where) {
  if (!v.is_array()) expected(where, "a list of strings", v);
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i)
    out.push_back(as_string(v[i], where + "[" + std::to_string(i) + "]"));
  return out;
}

const json& as_object(const json& v, const std::string& where) {
  if (!v.is_object()) expected(where, "an object", v);
  return v;
}

// Refuses keys outside `known`: a misspelt key would otherwise be a silently ignored setting.
void only_keys(const json& obj, const std::string& where, std::initializer_list<const char*> known,
               const std::string& hint = "") {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (ok) continue;
    std::string list;
    for (const char* k : known) list += std::string(list.empty() ? "" : ", ") + k;
    throw json_field_error("", (where.empty() ? "" : where + ".") + it.key(),
                           "unknown field (expected one of: " + list + ")" + hint);
  }
}

// libibverbs retries a verb whose ioctl fails with ENOTTY or EPROTONOSUPPORT through another
// encoding of the same command (rdma-core's cmd_write.h fallback): a uverbs denial with one of
// those errnos would turn into a write() the policy writer never saw.
void refuse_fallback_errno(int err, const std::string& where) {
  if (err == ENOTTY || err == EPROTONOSUPPORT)
    throw Error(where + ": " + (err == ENOTTY ? "ENOTTY" : "EPROTONOSUPPORT") +
                " makes libibverbs retry the verb through write(); use EPERM or "
                "EACCES");
}

DeviceClass parse_class(const std::string& s) {
  for (auto c : {DeviceClass::kUverbs, DeviceClass::kRdmaCm, DeviceClass::kNvidiaFrontend,
                 DeviceClass::kNvidiaUvm, DeviceClass::kNvidiaCaps})
    if (s == device_class_name(c)) return c;
  throw json_field_error("", "classes." + s,
                         "unknown device class (uverbs, rdma_cm, nvidia, nvidia-uvm, nvidia-caps)");
}

Action parse_action(const json& v, const std::string& where) {
  const std::string s = as_string(v, where);
  if (s == "allow") return Action::kAllow;
  if (s == "deny") return Action::kDeny;
  throw json_field_error("", where, "action must be \"allow\" or \"deny\", not \"" + s + "\"");
}

uint64_t parse_number(const json& v, const std::string& where) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    size_t used = 0;
    try {
      uint64_t n = std::stoull(s, &used, 0);
      if (used == s.size()) return n;
    } catch (...) {
    }
  }
  expected(where, "a number or a name the ABI tables know", v);
}

// A field given by name or number; `lookup` resolves names.
template <typename Lookup>
uint64_t name_or_number(const json& v, const std::string& where, Lookup lookup) {
  if (v.is_string()) {
    if (auto n = lookup(v.get<std::string>())) return *n;
  }
  return parse_number(v, where);
}

// A number for a field of type T: refused, never truncated, when it does not fit (a truncated
// number would name a call the operator did not write: {"escape": 298} is not RM_CONTROL).
// `where` names the field.
template <typename T>
T fits(uint64_t n, const std::string& where) {
  if (n > std::numeric_limits<T>::max())
    throw Error(where + ": " + std::to_string(n) + " does not fit the field's " +
                std::to_string(sizeof(T) * 8) + " bits");
  return static_cast<T>(n);
}

// An NVIDIA call named in a rule: its number in the generated tables of every release, newest
// first (only a miss walks the older ones). A name means one number in every release that has
// it; which release judges a call is the session's, never decided here.
template <typename FindGenerated>
std::optional<uint64_t> nvidia_number(FindGenerated generated) {
  const auto releases = nvidia_generated_releases();
  for (auto it = releases.rbegin(); it != releases.rend(); ++it)
    if (auto n = generated(**it)) return n;
  return std::nullopt;
}

template <typename Entry>
std::optional<uint64_t> number_of(const Entry* e) {
  if (!e) return std::nullopt;
  if constexpr (requires { e->cmd; }) {
    return e->cmd;
  } else {
    return e->id;
  }
}

std::optional<uint64_t> nvidia_control_by_name(const std::string& s) {
  return nvidia_number(
      [&](const NvGenTables& t) -> std::optional<uint64_t> { return nvidia_control_number(t, s); });
}

std::optional<uint64_t> nvidia_class_by_name(const std::string& s) {
  return nvidia_number([&](const NvGenTables& t) { return number_of(t.find_class(s)); });
}

std::optional<uint64_t> nvidia_escape_by_name(const std::string& s) {
  return nvidia_number([&](const NvGenTables& t) -> std::optional<uint64_t> {
    for (const NvGenEscape* e : t.escapes())
      if (s == e->name) return e->nr;
    return std::nullopt;
  });
}

std::optional<uint64_t> nvidia_uvm_by_name(const std::string& s) {
  return nvidia_number([&](const NvGenTables& t) -> std::optional<uint64_t> {
    for (const NvGenUvmIoctl* u : t.uvm_ioctls())
      if (s == u->name) return u->cmd;
    return std::nullopt;
  });
}

Rule parse_rule(const json& j, const std::string& where) {
  if (!j.is_object()) expected(where, "a rule (a JSON object)", j);
  Rule r;
  r.text = j.dump();
  // A provider named by the rule's object or method; they must agree with "provider".
  auto set_provider = [&](const uverbs::ProviderSpec* p, const std::string& w) {
    if (r.provider && *r.provider != p->driver_id)
      throw Error(w + ": names a " + p->name + " call, but the rule is for another provider");
    r.provider = p->driver_id;
  };
  if (j.is_object() && j.contains("provider")) {
    const std::string name = as_string(j["provider"], where + ".provider");
    const auto* p = uverbs::find_provider(name);
    if (!p)
      throw json_field_error("", where + ".provider",
                             "\"" + name + "\" is not an RDMA provider the tables know");
    r.provider = p->driver_id;
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    const std::string w = where + "." + k;
    if (k == "action") {
      r.action = parse_action(v, w);
    } else if (k == "call") {
      r.call_glob = as_string(v, w);
    } else if (k == "ioctl") {
      r.ioctl = fits<uint32_t>(parse_number(v, w), w);
    } else if (k == "object") {
      r.object = fits<uint16_t>(name_or_number(v, w,
                                               [&](const std::string& s) {
                                                 if (auto* o = uverbs::find_object(s))
                                                   return std::optional<uint64_t>(o->id);
                                                 const uverbs::ProviderSpec* owner = nullptr;
                                                 auto* o = uverbs::find_provider_object(s, &owner);
                                                 if (!o) return std::optional<uint64_t>();
                                                 set_provider(owner, w);
                                                 return std::optional<uint64_t>(o->id);
                                               }),
                                w);
    } else if (k == "provider") {
      // Read above.
    } else if (k == "method") {
      // Resolved below, once the object is known.
    } else if (k == "op") {
      const std::string name = as_string(v, w);
      r.has_op = true;
      if (auto* c = uverbs::find_write_cmd(name)) r.op_write_cmd = c->cmd;
      for (const auto& m : uverbs::all_methods())
        if (name == m.name) r.op_methods.emplace_back(m.object, m.method);
      if (!r.op_write_cmd && r.op_methods.empty())
        throw json_field_error(
            "", w, "\"" + name + "\" is neither a uverbs command nor a method the ABI tables know");
    } else if (k == "write_cmd") {
      r.write_cmd =
          fits<uint32_t>(name_or_number(v, w,
                                        [](const std::string& s) {
                                          auto* c = uverbs::find_write_cmd(s);
                                          return c ? std::optional<uint64_t>(c->cmd) : std::nullopt;
                                        }),
                         w);
    } else if (k == "escape") {
      r.escape = fits<uint8_t>(name_or_number(v, w, nvidia_escape_by_name), w);
    } else if (k == "class") {
      r.nv_class = fits<uint32_t>(name_or_number(v, w, nvidia_class_by_name), w);
    } else if (k == "control") {
      r.control = fits<uint32_t>(name_or_number(v, w, nvidia_control_by_name), w);
    } else if (k == "uvm") {
      r.uvm = fits<uint32_t>(name_or_number(v, w, nvidia_uvm_by_name), w);
    } else if (k == "errno") {
      r.err = parse_errno(v, w);
    } else if (k == "log") {
      r.log = as_bool(v, w);
    } else if (k != "comment") {
      throw json_field_error("", w, "unknown rule field");
    }
  }
  if (j.contains("method")) {
    const json& v = j["method"];
    if (v.is_string() && !r.object) throw Error(where + ".method: a method name needs \"object\"");
    r.method = fits<uint16_t>(name_or_number(v, where + ".method",
                                             [&](const std::string& s) {
                                               if (auto* m = uverbs::find_method(*r.object, s))
                                                 return std::optional<uint64_t>(m->method);
                                               const uverbs::ProviderSpec* owner = nullptr;
                                               auto* m = uverbs::find_provider_method(*r.object, s,
                                                                                      &owner);
                                               if (!m) return std::optional<uint64_t>();
                                               set_provider(owner, where + ".method");
                                               return std::optional<uint64_t>(m->method);
                                             }),
                              where + ".method");
  }
  return r;
}

GDRPROXY_HOT bool matches(const Rule& r, const DecodedCall& c) {
  const auto& k = c.keys;
  if (r.call_glob && !glob_match(r.call_glob->c_str(), c.name.c_str())) return false;
  if (r.ioctl && *r.ioctl != c.cmd) return false;
  if (r.object && k.uverbs_object != r.object) return false;
  if (r.method && k.uverbs_method != r.method) return false;
  if (r.provider && k.uverbs_provider != r.provider) return false;
  if (r.write_cmd && k.uverbs_write_cmd != r.write_cmd) return false;
  if (r.has_op) {
    const bool as_command = r.op_write_cmd && k.uverbs_write_cmd == r.op_write_cmd;
    bool as_method = false;
    if (k.uverbs_object && k.uverbs_method && !k.uverbs_write_cmd)
      for (const auto& [obj, method] : r.op_methods)
        as_method = as_method || (obj == *k.uverbs_object && method == *k.uverbs_method);
    if (!as_command && !as_method) return false;
  }
  if (r.escape && k.nv_escape != r.escape) return false;
  if (r.nv_class && k.nv_class != r.nv_class) return false;
  if (r.control && k.nv_control != r.control) return false;
  if (r.uvm && k.uvm_cmd != r.uvm) return false;
  return true;
}

// Whether the ABI tables name this call; unknown calls get the class's unknown_action.
GDRPROXY_HOT bool known_to_tables(const DecodedCall& c) {
  const auto& k = c.keys;
  switch (c.device_class) {
    case DeviceClass::kUverbs:
      if (k.uverbs_unjudged_attr) return false;
      // A legacy command written with write(): known when its command is.
      if (!k.uverbs_object && !k.uverbs_method && k.uverbs_write_cmd)
        return uverbs::find_write_cmd(*k.uverbs_write_cmd) != nullptr;
      if (!k.uverbs_object || !k.uverbs_method) return false;
      {
        // A driver-namespace method is known under the device's provider only, and only when
        // that provider's rdma-core library issues it.
        const auto* m = uverbs::find_method(k.uverbs_provider.value_or(uverbs::kProviderUnknown),
                                            *k.uverbs_object, *k.uverbs_method);
        if (!m || !m->issued_by_library) return false;
      }
      return !k.uverbs_write_cmd || uverbs::find_write_cmd(*k.uverbs_write_cmd);
    case DeviceClass::kNvidiaFrontend:
      // Judged by the session's release, as the decoder read it: the escape must be one it
      // names, and an RM call one it exports, converts or forwards.
      if (!k.nv_escape || !k.nv_named) return false;
      if (k.nv_control || k.nv_class)
        return k.nv_needs && *k.nv_needs != NvRequires::kNotTheDrivers;
      return true;
    case DeviceClass::kNvidiaUvm:
      return k.uvm_cmd && k.nv_named;
    default:
      return true;
  }
}

// Why a call is unknown: a provider's method its library never issues, or a call the tables do
// not name (under the device's provider, when it is known).
std::string unknown_reason(const DecodedCall& c) {
  const auto& k = c.keys;
  if (c.device_class == DeviceClass::kUverbs && k.uverbs_unjudged_attr) {
    const auto* m = k.uverbs_object && k.uverbs_method
                        ? uverbs::find_method(k.uverbs_provider.value_or(uverbs::kProviderUnknown),
                                              *k.uverbs_object, *k.uverbs_method)
                        : nullptr;
    if (m)
      for (const auto& a : m->attrs)
        if (a.id == *k.uverbs_unjudged_attr && a.kind == uverbs::AttrKind::kFdArray)
          return std::string(" unknown call: its ") + a.name +
                 " grant the context capabilities the policy cannot judge";
    return " unknown call: attribute " + std::to_string(*k.uverbs_unjudged_attr) +
           " is none the tables name for this method";
  }
  if (c.device_class == DeviceClass::kUverbs && k.uverbs_object && k.uverbs_method) {
    const auto* p = uverbs::find_provider(k.uverbs_provider.value_or(uverbs::kProviderUnknown));
    const auto* m = uverbs::find_method(p ? p->driver_id : uverbs::kProviderUnknown,
                                        *k.uverbs_object, *k.uverbs_method);
    if (m && !m->issued_by_library)
      return std::string(" unknown call: a ") + p->name +
             " method rdma-core's provider never issues";
    if (*k.uverbs_object >= uverbs::kDriverNamespace ||
        *k.uverbs_method >= uverbs::kDriverNamespace)
      return p ? std::string(" unknown call: not a method of the ") + p->name + " provider"
               : std::string(
                     " unknown call: a driver-namespace id on a device of unknown provider");
  }
  if (c.device_class == DeviceClass::kNvidiaFrontend && k.nv_needs)
    return k.nv_control ? " unknown call: the driver neither exports nor forwards this control"
                        : " unknown call: no class the driver allocates";
  return " unknown call";
}

// An RM call the running driver keeps for administrators, kernel clients or itself.
bool nvidia_privileged(const DecodedCall& c) {
  const auto& n = c.keys.nv_needs;
  return c.device_class == DeviceClass::kNvidiaFrontend && n && *n != NvRequires::kAnyone &&
         *n != NvRequires::kNotTheDrivers;
}

}  // namespace

int parse_errno(const json& v, const std::string& where) {
  // 0 would make a denied call return success without running; the kernel's errno range is
  // 1..4095 (MAX_ERRNO), and its internal codes (ERESTARTSYS ...) are no answer for a call.
  const char* kWhat = "an errno name such as \"EPERM\" or a number 1..4095";
  if (v.is_number_integer()) {
    const auto n = v.get<int64_t>();
    if (n >= 1 && n <= 4095 && !errno_is_kernel_internal(static_cast<int>(n)))
      return static_cast<int>(n);
    if (n >= 1 && n <= 4095)
      throw Error(where + ": " + std::to_string(n) + " is the kernel-internal " +
                  errno_name(static_cast<int>(n)) +
                  ", never a call's result; use a user-space errno");
    expected(where, "an errno from 1 to 4095 or a name such as \"EPERM\"", v);
  }
  if (!v.is_string()) expected(where, kWhat, v);
  const std::string s = v.get<std::string>();
  if (const std::optional<int> n = errno_by_name(s)) return *n;
  throw json_field_error(
      "", where,
      "unknown errno name \"" + s + "\" (glibc's names: EPERM, EACCES, ENODEV, EOPNOTSUPP, ...)");
}

Policy Policy::from_json(const json& j, const std::string& origin) {
  Policy p;
  p.origin_ = origin;
  try {
    if (!j.is_object()) expected("top level", "an object", j);
    // An NVIDIA allowlist (configs/allowlists/) is the file most often mistaken for a policy.
    const std::string hint = j.contains("escapes") || j.contains("driver")
                                 ? "; this looks like an NVIDIA allowlist (configs/allowlists/), "
                                   "which tests check recorded calls against, not a policy"
                                 : "";
    only_keys(j, "", {"version", "comment", "mode", "grants", "open_errno", "classes"}, hint);
    if (j.contains("version") && j["version"] != 1) expected("version", "1", j["version"]);
    if (j.contains("comment")) as_string(j["comment"], "comment");
    if (j.contains("mode")) {
      const std::string m = as_string(j["mode"], "mode");
      if (m != "trace" && m != "enforce") expected("mode", "\"trace\" or \"enforce\"", j["mode"]);
      p.mode_ = m == "trace" ? Mode::kTrace : Mode::kEnforce;
    }
    if (j.contains("grants")) p.grants_ = as_string_list(j["grants"], "grants");
    if (j.contains("open_errno")) p.open_errno_ = parse_errno(j["open_errno"], "open_errno");
    if (j.contains("classes")) as_object(j["classes"], "classes");
    const json classes = j.value("classes", json::object());
    for (auto& [name, body] : classes.items()) {
      ClassPolicy cp;
      const std::string where = "classes." + name;
      const DeviceClass cls = parse_class(name);
      as_object(body, where);
      only_keys(body, where,
                {"default", "unknown", "malformed", "privileged", "errno", "log", "rules",
                 "dmabuf_exporters", "comment"});
      if (body.contains("privileged")) {
        if (cls != DeviceClass::kNvidiaFrontend)
          throw Error(where +
                      ".privileged: applies to the nvidia class only (RM controls and "
                      "classes the driver keeps for administrators)");
        cp.privileged_action = parse_action(body["privileged"], where + ".privileged");
      }
      if (body.contains("default"))
        cp.default_action = parse_action(body["default"], where + ".default");
      if (body.contains("unknown"))
        cp.unknown_action = parse_action(body["unknown"], where + ".unknown");
      if (body.contains("malformed"))
        cp.malformed_action = parse_action(body["malformed"], where + ".malformed");
      if (body.contains("errno")) cp.err = parse_errno(body["errno"], where + ".errno");
      if (cls == DeviceClass::kUverbs) refuse_fallback_errno(cp.err, where + ".errno");
      if (body.contains("log")) cp.log = as_bool(body["log"], where + ".log");
      if (body.contains("dmabuf_exporters"))
        cp.dmabuf_exporters = as_string_list(body["dmabuf_exporters"], where + ".dmabuf_exporters");
      if (body.contains("rules") && !body["rules"].is_array())
        expected(where + ".rules", "a list of rules", body["rules"]);
      int i = 0;
      for (const auto& r : body.value("rules", json::array()))
        cp.rules.push_back(parse_rule(r, where + ".rules[" + std::to_string(i++) + "]"));
      // A provider (given, or implied by a provider's name) never matches another class's calls:
      // refused rather than a silently dead rule.
      for (size_t n = 0; n < cp.rules.size(); ++n)
        if (cp.rules[n].provider && cls != DeviceClass::kUverbs)
          throw Error(where + ".rules[" + std::to_string(n) +
                      "]: an RDMA provider applies to uverbs calls only");
      if (cls == DeviceClass::kUverbs)
        for (size_t n = 0; n < cp.rules.size(); ++n)
          if (cp.rules[n].err)
            refuse_fallback_errno(*cp.rules[n].err,
                                  where + ".rules[" + std::to_string(n) + "].errno");
      p.classes_[cls] = std::move(cp);
    }
  } catch (const json::exception& e) {
    throw json_field_error("policy " + origin, "", e.what());
  } catch (const std::runtime_error& e) {
    throw json_field_error("policy " + origin, "", e.what());
  }
  return p;
}

Policy Policy::builtin_default() {
  return from_json(json::parse(kDefaultPolicyJson), "built-in default");
}

Policy Policy::load_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw_errno("policy " + path, errno);
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw Error("policy " + path + ": " + e.what());
  }
  return from_json(j, path);
}

bool Policy::polices_uverbs_write_commands() const {
  const ClassPolicy* cp = class_policy(DeviceClass::kUverbs);
  if (!cp) return false;
  for (const auto& r : cp->rules)
    if (r.action == Action::kDeny && (r.write_cmd || r.op_write_cmd)) return true;
  return false;
}

const ClassPolicy* Policy::class_policy(DeviceClass c) const {
  auto it = classes_.find(c);
  return it == classes_.end() ? nullptr : &it->second;
}

GDRPROXY_HOT Verdict Policy::evaluate(const DecodedCall& call, bool explain_allow) const {
  Verdict v;
  auto it = classes_.find(call.device_class);
  static const ClassPolicy kOpen{};
  const ClassPolicy& cp = it == classes_.end() ? kOpen : it->second;
  const char* cls = device_class_name(call.device_class);
  const auto explain = [&] { return explain_allow || v.action != Action::kAllow; };
  if (!call.malformed.empty()) {
    v.action = cp.malformed_action;
    v.err = EINVAL;
    v.log = cp.log;
    if (explain()) v.reason = std::string(cls) + " malformed: " + call.malformed;
    return v;
  }
  for (size_t i = 0; i < cp.rules.size(); ++i) {
    const Rule& r = cp.rules[i];
    if (!matches(r, call)) continue;
    v.action = r.action;
    v.err = r.err.value_or(cp.err);
    v.log = r.log.value_or(cp.log);
    if (explain()) v.reason = std::string(cls) + " rule #" + std::to_string(i) + " " + r.text;
    return v;
  }
  const bool known = known_to_tables(call);
  v.err = cp.err;
  v.log = cp.log;
  if (known && nvidia_privileged(call)) {
    v.action = cp.privileged_action;
    if (explain())
      v.reason = std::string(cls) + " privileged: the driver lets only " +
                 nv_requires_name(*call.keys.nv_needs) + " make it";
    return v;
  }
  v.action = known ? cp.default_action : cp.unknown_action;
  if (explain()) v.reason = std::string(cls) + (known ? " default" : unknown_reason(call));
  return v;
}

}  // namespace gdrproxy::proxy
