// The in-kernel ALLOW of ioctl requests in an OCI seccomp profile, written and read in one place.
// The idea not to miss: a runtime compiles the profile with libseccomp, which checks the masked
// comparisons of one argument in descending order of their compared value, so an ALLOW of the
// exact request X (mask 0xffffffff) runs before every trap (X & mask) == value that covers it
// exactly when X > value; an X for which that does not hold (a trap of its own value) is left
// trapping, and the entries go first. The agent reads the same entries
// back from the bundle's config.json: what a profile lets run untrapped must be what the agent's
// own policy would allow unread for that container, or the container does not run.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "proxy/sandbox/notify_rules.h"

namespace gdrproxy::proxy {

// The profile entry that lets `request` run untrapped (ioctl, arg 1 masked to 32 bits: the
// kernel truncates the request, so high bits change nothing the driver sees).
nlohmann::json untrapped_ioctl_entry(uint32_t request);

// The entries for `requests` (sorted, unique), to be placed before every other ioctl rule; a
// request that could not be ordered before a rule of `rules` matching it gets none (it keeps
// trapping, and the agent allows it unread). Throws gdrproxy::Error when `default_action` is
// SCMP_ACT_ALLOW: libseccomp refuses a rule whose action is the default.
std::vector<nlohmann::json> untrapped_ioctl_entries(const std::vector<uint32_t>& requests,
                                                    const std::vector<SyscallRule>& rules,
                                                    const std::string& default_action);

// What a profile (OCI linux.seccomp) lets ioctl requests do untrapped: the exact requests of
// its untrapped_ioctl_entry()s, and, in `unjudged`, the first other rule that lets ioctl run on
// a condition of its request (a base's own rule), whose effect only libseccomp's ordering decides.
// Rules of other actions, of other syscalls, or unconditional on the request (the always-true
// rewrite of a base's allow) are not read.
struct ProfileUntrapped {
  std::vector<uint32_t> requests;  // sorted, unique
  std::optional<std::string> unjudged;
};
ProfileUntrapped profile_untrapped_ioctls(const nlohmann::json& seccomp);

}  // namespace gdrproxy::proxy
