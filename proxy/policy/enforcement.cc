#include "proxy/policy/enforcement.h"

#include "base/error.h"
#include "proxy/abi/nvidia_abi_choice.h"

namespace gdrproxy::proxy {

Enforcement Enforcement::decide(Mode mode, const NvidiaDriverFacts& nv, bool allow_unknown,
                                std::string& note) {
  if (nv.known || !nv.has_nodes || !nv.loaded) {
    note = nv.has_nodes && nv.loaded ? nv.notice : std::string();
    return Enforcement(mode, true);
  }
  const std::string version = nv.version.value_or("(version unreadable)");
  if (mode == Mode::kEnforce && !allow_unknown)
    throw Error("NVIDIA driver " + version +
                " is of a branch this build's ABI tables do not hold (they hold " +
                nvidia_covered_branches() + ", newest " + std::string(nvidia_newest_release()) +
                "): refusing to enforce a policy on calls it cannot name; name the release whose "
                "tables to judge it with (--nvidia-abi-as RELEASE; \"nvidia_abi_as\" in the "
                "agent's config and runtime.json), or pass --allow-unknown-nvidia-driver to run "
                "NVIDIA calls trace-only");
  note = "NVIDIA driver " + version +
         " is not in this build's ABI tables: NVIDIA calls are traced with " + nv.tables +
         " names and never denied (trace-only)";
  return Enforcement(mode, false);
}

}  // namespace gdrproxy::proxy
