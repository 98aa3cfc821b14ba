// Compiles an OCI `linux.seccomp` profile with libseccomp the way runc and crun do (one rule per
// syscall name; arguments on distinct indexes ANDed in one rule, repeated indexes as separate
// rules; a rule whose action is the default action skipped), for the golden PFC tests and for
// checking a profile's behaviour on the real kernel. It is a reader's model of the runtimes, not
// a runtime: the container's filter is always built by runc or crun itself.
#pragma once

#include <linux/filter.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gdrproxy::proxy {

// libseccomp's pseudo filter code for `profile`. Throws gdrproxy::Error naming the field.
std::string profile_to_pfc(const nlohmann::json& profile);
// The BPF program for `profile`.
std::vector<sock_filter> profile_to_bpf(const nlohmann::json& profile);

}  // namespace gdrproxy::proxy
