// The runtime shim's two inputs besides its command line: the operator's runtime.json (what any
// container may be granted, and how) and the bundle's config.json, whose linux.devices say which
// devices this container asks for. The idea not to miss: both are parsed from text here, apart
// from the files, so the parsers are fuzzed (tests/fuzz/runtime_config_fuzz.cc); an absent
// runtime.json grants nothing, and a config.json device outside the catalog is not ours to judge.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/oci/agent_sockets.h"

namespace gdrproxy::proxy {

class DeviceCatalog;

// runtime.json.
struct ShimConfig {
  std::string runtime = "runc";
  std::string listener = kAgentSocket;
  std::vector<std::string> grants;  // globs: the most a container may ask for
  std::optional<std::string> base, metadata;
  bool sysfs = true;                // a synthetic /sys of the granted devices
  std::string sysfs_root = "/sys";  // the host's sysfs (test rigs: a constructed one)
  // "rails": true moves the RoCE netdevs of each granted RDMA device (read under sysfs_root)
  // into the container by createRuntime/poststop hooks, as a CDI spec's device does.
  bool rails = false;
  std::string rail_profile = "multirail";
  bool allow_plain_rails = false;             // the netdevs need not back an RDMA device (rigs)
  std::optional<std::string> rail_state_dir;  // the hooks' journals; unset: their default
  // "kernel_allow": true lets the requests `policy` (a file; unset: the built-in one) allows
  // whatever their parameters run untrapped, as `oci prepare --kernel-allow` does; the agent's
  // rule for the container must agree (same policy, no trace) or the agent kills it at start.
  bool kernel_allow = false;
  // "lsm_judged": true (with kernel_allow), as `oci prepare --lsm-judged`: the agent judges the
  // container with its pinned BPF LSM judge, so the requests run untrapped where only some
  // devices of their class are granted.
  bool lsm_judged = false;
  // "lsm_hook": true (implied by lsm_judged), as `oci prepare --lsm-hook`: a createRuntime hook
  // has the agent at "agent_ctl" (its control socket) judge the container from its creation.
  bool lsm_hook = false;
  std::string agent_ctl = kAgentCtlSocket;
  std::optional<std::string> policy;
  // "nvidia_abi_as": the release whose tables judge the node's NVIDIA driver when "kernel_allow"
  // asks what runs untrapped; the agent's config must name the same ("nvidia_abi_as").
  std::optional<std::string> nvidia_abi_as;
  // "accept_unconfined": true starts a privileged container that asks for a granted device
  // (proxy/oci/container_privilege.h) with one warning line, and marks it in listenerMetadata so
  // the agent says it and its trace records it; false (the default) refuses it.
  bool accept_unconfined = false;
  bool found = false;
};

// Parses runtime.json's text; `origin` (its path) starts every error. Throws gdrproxy::Error
// naming the key and what was expected.
ShimConfig parse_shim_config(std::string_view text, const std::string& origin);
// The file at `path`; a missing file is the empty config (found false: nothing granted).
ShimConfig load_shim_config(const std::string& path);

// The catalogued devices a config.json's linux.devices asks for, by grant name; `origin` names
// the file in errors. `catalog` is called at the first character device entry, so a spec that
// asks for none (a pod's pause container) costs no scan of /dev. Throws gdrproxy::Error for a
// file that is not a JSON object, a device entry that is malformed, or a device that can never be
// granted.
std::vector<std::string> requested_devices(std::string_view config_json, const std::string& origin,
                                           const std::function<const DeviceCatalog&()>& catalog);

}  // namespace gdrproxy::proxy
