// The choice of tables for the node's NVIDIA driver (nvidia_abi_choice.h), made from the list of
// generated releases alone: only the chosen release is materialized.
#include "proxy/abi/nvidia_abi_choice.h"

#include <algorithm>
#include <set>
#include <vector>

#include "base/error.h"
#include "proxy/abi/nvidia_generated.h"

namespace gdrproxy::proxy {
namespace {

// Every release by version, sorted once (comparing versions parses them).
const std::vector<std::string_view>& releases_in_order() {
  static const std::vector<std::string_view> sorted = [] {
    std::vector<std::string_view> out;
    for (const NvGenTables* t : nvidia_generated_releases()) out.push_back(t->version);
    std::sort(out.begin(), out.end(), [](std::string_view a, std::string_view b) {
      return nvidia_version_key(a) < nvidia_version_key(b);
    });
    return out;
  }();
  return sorted;
}

unsigned long branch_of(std::string_view v) {
  const auto key = nvidia_version_key(v);
  return key.empty() ? 0 : key.front();
}

// The newest release not newer than `version`, among those `keep` accepts; empty if none.
template <typename Keep>
std::string_view nearest_lower(std::string_view version, Keep keep) {
  std::string_view best;
  const auto key = nvidia_version_key(version);
  for (std::string_view r : releases_in_order())
    if (nvidia_version_key(r) <= key && keep(r)) best = r;
  return best;
}

}  // namespace

std::string nvidia_covered_branches() {
  std::set<unsigned long> branches;
  for (std::string_view r : releases_in_order()) branches.insert(branch_of(r));
  std::string s;
  for (unsigned long b : branches) s += (s.empty() ? "" : ", ") + std::to_string(b);
  return s;
}

std::string_view nvidia_newest_release() {
  const auto& all = releases_in_order();
  return all.empty() ? std::string_view() : all.back();
}

NvidiaAbiChoice choose_nvidia_abi(const std::optional<std::string>& version,
                                  const std::optional<std::string>& abi_as) {
  NvidiaAbiChoice c;
  const auto& all = releases_in_order();
  const std::string v = version.value_or("(version unreadable)");
  if (abi_as) {
    c.abi = nvidia_abi_for_version(*abi_as);
    if (!c.abi) {
      const std::string_view near = nearest_lower(*abi_as, [](std::string_view) { return true; });
      throw Error("--nvidia-abi-as " + *abi_as +
                  ": this build has no tables for that release (it holds branches " +
                  nvidia_covered_branches() + ", newest " + std::string(nvidia_newest_release()) +
                  (near.empty() ? "" : "; the nearest lower is " + std::string(near)) + ")");
    }
    c.naming = c.abi;
    c.match = version && *version == *abi_as ? NvAbiMatch::kExact : NvAbiMatch::kNamed;
    if (c.match == NvAbiMatch::kNamed)
      c.notice = "NVIDIA driver " + v + ": enforcing with the tables of " + *abi_as +
                 ", as the operator named them (--nvidia-abi-as); every call's size is checked "
                 "against them and a mismatch is refused as malformed";
    return c;
  }
  if (!version) {
    c.match = NvAbiMatch::kNoVersion;
    c.naming = all.empty() ? nullptr : nvidia_abi_for_version(all.back());
    return c;
  }
  if ((c.abi = nvidia_abi_for_version(*version))) {
    c.match = NvAbiMatch::kExact;
    c.naming = c.abi;
    return c;
  }
  const unsigned long branch = branch_of(*version);
  const std::string_view same_branch =
      nearest_lower(*version, [&](std::string_view r) { return branch_of(r) == branch; });
  if (!same_branch.empty()) {
    c.match = NvAbiMatch::kNearestPatch;
    c.abi = nvidia_abi_for_version(same_branch);
    c.naming = c.abi;
    c.notice = "NVIDIA driver " + *version + " is not in this build's tables: enforcing with " +
               std::string(same_branch) + "'s, the nearest lower release of branch " +
               std::to_string(branch) +
               "; every call's size is checked against them (a mismatch is refused as "
               "malformed) and a control or class they do not name is refused as unknown";
    return c;
  }
  c.match = NvAbiMatch::kUncovered;
  const std::string_view any = nearest_lower(*version, [](std::string_view) { return true; });
  c.naming = nvidia_abi_for_version(any.empty() ? (all.empty() ? "" : all.front()) : any);
  return c;
}

}  // namespace gdrproxy::proxy
