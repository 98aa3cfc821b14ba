// What a device call is allowed to do: per device class, an ordered rule list (first match wins),
// a default action, an action for calls the tables do not know, and errno/log settings. Rules
// name calls the way the tables do ("REG_MR", "MR"/"REG_DMABUF_MR", "RM_ALLOC", a class or
// control name) or by number; names are resolved when the policy is loaded, so a typo is a load
// error and never a silently dead rule. Input the decoder could not parse is denied in enforce
// mode (fail closed).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "proxy/abi/errno_names.h"  // errno_name(), which denial lines use with the policy
#include "proxy/decode/decoded_call.h"

namespace gdrproxy::proxy {

enum class Mode { kTrace, kEnforce };
enum class Action { kAllow, kDeny };

struct Rule {
  Action action = Action::kDeny;
  std::optional<std::string> call_glob;  // matched against DecodedCall::name ('*' wildcard)
  std::optional<uint32_t> ioctl;
  std::optional<uint16_t> object, method;
  // The RDMA provider (enum rdma_driver_id) the rule is for: set by "provider", or by an object
  // or method named from a provider's table. Driver-namespace ids collide between providers, so
  // such a rule matches calls on that provider's devices only.
  std::optional<uint32_t> provider;
  std::optional<uint32_t> write_cmd;
  // "op": one uverbs operation whatever its encoding: the legacy command of that name (as an
  // INVOKE_WRITE or a write()) and every ioctl method of that name (CQ.CREATE_CQ for CREATE_CQ).
  std::optional<uint32_t> op_write_cmd;
  std::vector<std::pair<uint16_t, uint16_t>> op_methods;
  bool has_op = false;
  std::optional<uint8_t> escape;
  std::optional<uint32_t> nv_class, control, uvm;
  std::optional<int> err;
  std::optional<bool> log;
  std::string text;  // the rule as written, for log lines
};

struct ClassPolicy {
  Action default_action = Action::kAllow;
  Action unknown_action = Action::kDeny;  // calls the ABI tables do not name (fail closed)
  Action malformed_action = Action::kDeny;
  // nvidia: RM controls and classes the driver keeps for administrators, kernel clients or
  // itself (nvidia_access.h). A rule naming one allows it.
  Action privileged_action = Action::kDeny;
  int err = 1;  // EPERM
  bool log = true;
  std::vector<Rule> rules;
  // uverbs: exporters whose dma-bufs REG_DMABUF_MR may register; empty = no provenance check.
  std::vector<std::string> dmabuf_exporters;
};

struct Verdict {
  Action action = Action::kAllow;
  int err = 0;
  bool log = false;
  std::string reason;  // "uverbs rule #2 {write_cmd: REG_MR}", "malformed", ...
};

class Policy {
 public:
  static Policy builtin_default();
  static Policy load_file(const std::string& path);  // throws gdrproxy::Error
  static Policy from_json(const nlohmann::json& j, const std::string& origin);

  // `explain_allow` false: an allow carries no reason (the enforce fast path, which never prints
  // or records an allowed call, builds no string); a denial always says why.
  Verdict evaluate(const DecodedCall& call, bool explain_allow = true) const;
  const ClassPolicy* class_policy(DeviceClass c) const;

  // nullopt: the policy names no grants; an empty list grants no device.
  const std::optional<std::vector<std::string>>& grants() const { return grants_; }
  int open_errno() const { return open_errno_; }
  std::optional<Mode> mode() const { return mode_; }
  const std::string& origin() const { return origin_; }
  // Whether a uverbs deny rule names a legacy command (write_cmd, or an op that has one): such a
  // rule also covers the command's write() encoding, which is observed but never trapped.
  bool polices_uverbs_write_commands() const;

 private:
  std::map<DeviceClass, ClassPolicy> classes_;
  std::optional<std::vector<std::string>> grants_;
  int open_errno_ = 13;  // EACCES
  std::optional<Mode> mode_;
  std::string origin_;
};

// errno by name ("EPERM", any glibc knows) or number (1..4095, not a kernel-internal code);
// throws naming `where` otherwise.
int parse_errno(const nlohmann::json& v, const std::string& where);

}  // namespace gdrproxy::proxy
