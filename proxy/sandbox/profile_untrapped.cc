// Writing and reading the in-kernel ALLOW entries of an OCI profile (see profile_untrapped.h).
#include "proxy/sandbox/profile_untrapped.h"

#include <algorithm>

#include "base/error.h"

namespace gdrproxy::proxy {
namespace {

using json = nlohmann::json;

constexpr uint64_t kRequestMask = 0xffffffffull;

bool names_ioctl(const json& e) {
  if (!e.contains("names") || !e["names"].is_array()) return false;
  return std::any_of(e["names"].begin(), e["names"].end(), [](const json& n) {
    return n.is_string() && n.get<std::string>() == "ioctl";
  });
}

bool lets_run(const json& e) {
  if (!e.contains("action") || !e["action"].is_string()) return false;
  const std::string a = e["action"].get<std::string>();
  return a == "SCMP_ACT_ALLOW" || a == "SCMP_ACT_LOG";
}

// A comparison's field as an unsigned 64-bit number (absent: 0).
std::optional<uint64_t> number(const json& arg, const char* key) {
  if (!arg.contains(key)) return 0;
  if (!arg[key].is_number_unsigned() && !arg[key].is_number_integer()) return std::nullopt;
  return arg[key].get<uint64_t>();
}

}  // namespace

json untrapped_ioctl_entry(uint32_t request) {
  return {{"names", json::array({"ioctl"})},
          {"action", "SCMP_ACT_ALLOW"},
          {"args", json::array({{{"index", 1},
                                 {"value", kRequestMask},
                                 {"valueTwo", request},
                                 {"op", "SCMP_CMP_MASKED_EQ"}}})},
          {"comment", "gdrproxy: allowed whatever its parameters, runs untrapped"}};
}

std::vector<json> untrapped_ioctl_entries(const std::vector<uint32_t>& requests,
                                          const std::vector<SyscallRule>& rules,
                                          const std::string& default_action) {
  std::vector<json> out;
  if (requests.empty()) return out;
  if (default_action == "SCMP_ACT_ALLOW")
    throw Error(
        "seccomp profile: a profile whose default action is SCMP_ACT_ALLOW cannot let ioctls run "
        "untrapped (libseccomp refuses a rule of the default action); give a deny-by-default "
        "base, or leave the in-kernel ALLOW off");
  for (const uint32_t x : requests) {
    const bool ordered = std::none_of(rules.begin(), rules.end(), [x](const SyscallRule& r) {
      return r.syscall == "ioctl" && r.arg && r.arg->index == 1 &&
             (x & r.arg->mask) == r.arg->value && x <= r.arg->value;
    });
    if (ordered) out.push_back(untrapped_ioctl_entry(x));
  }
  return out;
}

ProfileUntrapped profile_untrapped_ioctls(const json& seccomp) {
  ProfileUntrapped p;
  if (!seccomp.is_object() || !seccomp.contains("syscalls") || !seccomp["syscalls"].is_array())
    return p;
  size_t i = 0;
  for (const json& e : seccomp["syscalls"]) {
    const size_t at = i++;
    if (!e.is_object() || !names_ioctl(e) || !lets_run(e)) continue;
    if (!e.contains("args") || !e["args"].is_array() || e["args"].empty()) continue;
    bool on_request = false;
    for (const json& a : e["args"])
      if (a.is_object() && number(a, "index") == std::optional<uint64_t>(1)) on_request = true;
    if (!on_request) continue;
    const json& args = e["args"];
    const json& a = args[0];
    const auto mask = number(a, "value"), value = number(a, "valueTwo");
    const bool ours = args.size() == 1 && a.is_object() &&
                      a.value("op", "") == "SCMP_CMP_MASKED_EQ" && mask && value &&
                      (*mask & kRequestMask) == kRequestMask && *value <= kRequestMask &&
                      names_ioctl(e) && e["names"].size() == 1 && e["action"] == "SCMP_ACT_ALLOW";
    if (ours) {
      p.requests.push_back(static_cast<uint32_t>(*value));
    } else if (!p.unjudged) {
      p.unjudged =
          "syscalls[" + std::to_string(at) + "] lets ioctl run on a condition of its request";
    }
  }
  std::sort(p.requests.begin(), p.requests.end());
  p.requests.erase(std::unique(p.requests.begin(), p.requests.end()), p.requests.end());
  return p;
}

}  // namespace gdrproxy::proxy
