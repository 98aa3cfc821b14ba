#include "proxy/policy/enforcement.h"

#include "base/error.h"

namespace gdrproxy::proxy {

Enforcement Enforcement::decide(Mode mode, const NvidiaDriverFacts& nv, bool allow_unknown,
                                std::string& note) {
  if (nv.known || !nv.has_nodes || !nv.loaded) return Enforcement(mode, true);
  if (mode == Mode::kEnforce && !allow_unknown)
    throw Error("NVIDIA driver " + nv.version.value_or("(version unreadable)") +
                " is not in this build's ABI tables (newest known: " + nv.tables +
                "): refusing to enforce a policy on calls it cannot name; pass "
                "--allow-unknown-nvidia-driver to run NVIDIA calls trace-only");
  note = "NVIDIA driver " + nv.version.value_or("(version unknown)") +
         " is not in this build's ABI tables: NVIDIA calls are traced with " + nv.tables +
         " names and never denied (trace-only)";
  return Enforcement(mode, false);
}

}  // namespace gdrproxy::proxy
