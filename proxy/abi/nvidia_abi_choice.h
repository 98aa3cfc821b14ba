// Which release's tables judge the node's NVIDIA driver. The one idea: a fleet upgrades its
// driver before any build of ours has seen the new release, and that must never stop a node.
//   - the release is in the tables: its own tables (exact);
//   - a later patch of a branch the tables hold (580.178.04 beside 580.173.02): the nearest
//     lower release of that branch. Its sizes are checked on every call (an escape's IOC_SIZE, a
//     fixed-size control's paramsSize, an allocation's parameter size), a mismatch is refused as
//     malformed, and a control or class it does not name is refused as unknown;
//   - a branch the tables do not hold (or a release older than the branch's first): none, unless
//     the operator names the tables to use (--nvidia-abi-as, "nvidia_abi_as");
//   - no version readable: none.
// Mechanism-free: the engine applies the choice, Enforcement refuses to start without tables,
// doctor explains it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "proxy/abi/nvidia_abi.h"

namespace gdrproxy::proxy {

enum class NvAbiMatch {
  kExact,         // the driver's own release
  kNearestPatch,  // a later patch of a branch the tables hold: its nearest lower release
  kNamed,         // the operator named the tables (--nvidia-abi-as)
  kUncovered,     // a branch (or an early release of one) the tables do not hold
  kNoVersion,     // no driver version readable
};

struct NvidiaAbiChoice {
  NvAbiMatch match = NvAbiMatch::kNoVersion;
  // The tables calls are judged with; nullptr for kUncovered and kNoVersion.
  const NvidiaDriverAbi* abi = nullptr;
  // The tables calls are only named with when `abi` is null (trace-only): the nearest lower
  // release of any branch, else the oldest.
  const NvidiaDriverAbi* naming = nullptr;
  // One line for the operator: what was chosen and why (empty for kExact).
  std::string notice;
};

// The choice for a driver `version` (nullopt: unreadable) and the operator's `abi_as` (a release
// the tables hold; throws gdrproxy::Error naming the nearest ones when they do not).
NvidiaAbiChoice choose_nvidia_abi(const std::optional<std::string>& version,
                                  const std::optional<std::string>& abi_as);

// The branches the tables hold, "535, 550, ..., 595", and the newest release, for messages.
std::string nvidia_covered_branches();
std::string_view nvidia_newest_release();

}  // namespace gdrproxy::proxy
