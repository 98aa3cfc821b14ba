// `gdrproxy oci prepare BUNDLE`: edits a bundle's config.json so that runc or crun start the
// container under `gdrproxy agent` with exactly its grant set: the seccomp profile with the
// agent's listener, nodes in /dev for the granted devices only, the device cgroup as the kernel
// guard, a /sys of the granted devices only, and the rails' hooks. The idea not to miss: every part
// is derived from one ContainerGrants object, and the grant names travel to the agent in
// listenerMetadata, which the agent ties to this very config.json before it reads them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "proxy/oci/container_sysfs.h"
#include "proxy/oci/seccomp_profile.h"

namespace gdrproxy::proxy {

struct PrepareOptions {
  std::vector<std::string> grants;  // device names or /dev paths
  // listener, extra metadata, traps, caps; filter.kernel_allowed_ioctls: the requests to let run
  // untrapped (host_container_untrapped_ioctls), dropped where the profile allows by default
  ProfileOptions profile;
  std::optional<std::string> base;  // base profile file; default: the bundle's own seccomp
  std::string dev_root = "/dev";
  // RoCE rails the container gets: createRuntime and poststop hooks (`gdrproxy hook`) that move
  // them into its network namespace with `rail_profile` and give them back.
  std::vector<std::string> rails;
  std::string rail_profile = "multirail";
  bool allow_plain_rails = false;  // rails without an RDMA device (test rigs)
  // The runtime shim moves them itself while the runtime creates the container (early_rails.h):
  // only the poststop hook is written.
  bool rails_moved_at_create = false;
  // Where the hooks keep their journals (`gdrproxy hook ... --state-dir`); unset: their default.
  std::optional<std::string> rail_state_dir;
  // The agent's control socket for a createRuntime hook `gdrproxy hook judge`, the first of
  // them: the agent's BPF LSM judge judges the container from its creation, not from its
  // handover. Unset: no such hook.
  std::optional<std::string> judge_hook_ctl;
  // The synthetic /sys of the granted devices, as spec mounts (see container_sysfs.h); nullopt
  // leaves the bundle's /sys as it is.
  std::optional<ContainerSysfsOptions> sysfs = ContainerSysfsOptions{};
};

// Edits <bundle>/config.json in place (written to a temporary file and renamed). Returns a one-
// line summary. Throws gdrproxy::Error naming the bundle and what is wrong.
std::string prepare_bundle(const std::string& bundle, const PrepareOptions& options);

}  // namespace gdrproxy::proxy
