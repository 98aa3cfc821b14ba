// Whether a denial the policy decides is enforced: the mode, and the uncovered-driver rule. The
// idea not to miss: every release the tables hold, and every later patch of their branches, is
// judged with tables (nvidia_abi_choice.h); only a driver of a branch they do not hold, with no
// tables named for it, cannot be policed by name. In enforce mode the sandbox then refuses to
// start, unless the operator chose to run its NVIDIA calls trace-only (their denials said, never
// enforced); every other class stays enforced. Policy, apart from the engine that applies it.
#pragma once

#include <optional>
#include <string>

#include "proxy/decode/decoded_call.h"
#include "proxy/policy/policy.h"

namespace gdrproxy::proxy {

// The NVIDIA driver as far as the rule needs it.
struct NvidiaDriverFacts {
  bool loaded = false;                 // a driver is loaded (its /proc entry exists)
  bool known = false;                  // tables judge its calls (its own, or chosen for it)
  bool has_nodes = false;              // the sandbox's catalog has NVIDIA frontend or UVM nodes
  std::optional<std::string> version;  // the kernel module's, if readable
  std::string tables;                  // the version of the tables its calls are named with
  std::string notice;                  // why those tables, when they are not the driver's own
};

class Enforcement {
 public:
  Enforcement() = default;  // enforce mode, every class enforced
  Enforcement(Mode mode, bool nvidia_enforced) : mode_(mode), nvidia_enforced_(nvidia_enforced) {}

  // The uncovered-driver rule. A driver no tables judge, with NVIDIA nodes to reach it, is
  // refused in enforce mode (gdrproxy::Error, saying how to name tables or run it trace-only)
  // unless `allow_unknown`; its calls are then trace-only, and `note` says so. A driver judged
  // with tables other than its own gets their notice in `note`. No driver loaded: what answers
  // on the nodes is not NVIDIA's, so there is no version to disagree with.
  static Enforcement decide(Mode mode, const NvidiaDriverFacts& nvidia, bool allow_unknown,
                            std::string& note);

  Mode mode() const { return mode_; }
  // NVIDIA calls' denials are enforced (in enforce mode).
  bool nvidia_enforced() const { return nvidia_enforced_; }
  // A denial of a call on a device of class `cls` is enforced.
  bool enforced(DeviceClass cls) const {
    const bool nvidia = cls == DeviceClass::kNvidiaFrontend || cls == DeviceClass::kNvidiaUvm;
    return mode_ == Mode::kEnforce && (!nvidia || nvidia_enforced_);
  }
  // Why a denial is not enforced, for the line that says it would deny.
  const char* why_not() const {
    return mode_ == Mode::kTrace ? "trace mode" : "driver not in the ABI tables";
  }

 private:
  Mode mode_ = Mode::kEnforce;
  bool nvidia_enforced_ = true;
};

}  // namespace gdrproxy::proxy
