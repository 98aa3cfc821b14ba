// The seccomp profile of a container served by `gdrproxy agent`: a base profile (Docker's or
// Podman's format, an OCI runtime-spec `linux.seccomp` object, or none) merged with gdrproxy's
// notify and refusal rules (proxy/sandbox/notify_rules.h), plus the listener socket and metadata.
//
// The idea not to miss: libseccomp drops every conditional rule of a syscall that also has an
// unconditional rule (2.5.4, the one runc and crun link: `ALLOW ioctl` next to `NOTIFY ioctl if
// type is 0x1b` compiles to "ALLOW ioctl"). Base profiles allow ioctl and openat unconditionally,
// so the merge rewrites such entries: a trapped syscall's unconditional base rule becomes the same
// action under a condition that always holds (args[0] >= 0), which libseccomp orders after the
// notify conditions. Golden PFC tests (tests/oci/) pin the compiled result for each base.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "proxy/sandbox/notify_rules.h"

namespace gdrproxy::proxy {

struct ProfileOptions {
  std::string listener_path;            // linux.seccomp.listenerPath (absolute)
  std::optional<std::string> metadata;  // linux.seccomp.listenerMetadata
  FilterOptions filter;                 // what is trapped (pidfd_getfd always is)
  bool wait_killable_recv = false;      // add SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
  // Capabilities of the container, for a Docker-format base's includes/excludes ("CAP_SYS_ADMIN").
  std::vector<std::string> caps;
  std::string kernel_release;  // for "minKernel"; "" = the running kernel's
};

// Docker's default capability set (what `docker run` grants without --cap-add).
std::vector<std::string> docker_default_caps();

// A base profile in OCI runtime-spec form: a Docker/Podman-format profile has its archMap,
// includes and excludes resolved for this machine's architecture, `caps` and kernel; an OCI one
// is returned as is. Throws gdrproxy::Error naming `origin` and the field on a malformed one.
nlohmann::json resolve_base_profile(const nlohmann::json& base, const ProfileOptions& options,
                                    const std::string& origin);

// The merged profile (OCI runtime-spec `linux.seccomp` form). `base` is resolve_base_profile's
// output, or null for none (default action ALLOW). Architectures are reduced to the native one:
// a foreign-ABI syscall would reach a device under numbers the agent does not decode.
nlohmann::json merge_profile(const nlohmann::json& base, const ProfileOptions& options);

// Whether the runtime (a path, or a name looked up in PATH) names
// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (runc >= 1.5 does; older runtimes refuse a flag they do
// not know), and the running kernel is >= 5.19. With `cache_dir`, the binary's answer is kept
// there and read back on later calls (runtime_feature_cache.h); empty: scanned every time.
bool runtime_supports_wait_killable_recv(const std::string& runtime,
                                         const std::string& cache_dir = "");

}  // namespace gdrproxy::proxy
