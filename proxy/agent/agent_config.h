// What the agent gives each container: devices, policy, mode, trace. The idea not to miss: this
// comes only from the operator's file (/etc/gdrproxy/agent.json), matched on what the runtime
// reports and the operator controls (container id, bundle path, listenerMetadata that the
// operator's runtime shim writes), never from annotations, which in Kubernetes the tenant writes.
// A container no rule matches gets no device (and the default policy).
//
// {"version": 1,
//  "containers": [
//    {"match": {"id": "train-*", "bundle": "/run/containers/*", "metadata": "gdrproxy=job42*"},
//     "grants": ["uverbs0", "nvidiactl", "nvidia0", "nvidia-uvm"],
//     "policy": "/etc/gdrproxy/policy.json", "mode": "enforce", "trace": true,
//     "broker_pidfd_getfd": true, "pidfd_getfd_group": "job42"}],
//  "default": {"grants": [], "mode": "enforce"}}
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "proxy/policy/policy.h"

namespace gdrproxy::proxy {

struct ContainerRule {
  // '*' globs; an absent field matches anything, an absent "match" matches every container.
  std::optional<std::string> id, bundle, metadata;
  // Device names or /dev paths; empty = no device. nullopt = the policy's grants.
  std::optional<std::vector<std::string>> grants;
  std::optional<std::string> policy_file;  // nullopt = the built-in default policy
  std::optional<Mode> mode;                // nullopt = the policy's, else enforce
  bool trace = false;                      // write <trace-dir>/<id>.jsonl
  // Perform the container's trapped pidfd_getfd calls whose target is one of its own processes
  // (its pid namespace) or, with a group, a process of another container in the same group.
  bool broker_pidfd_getfd = false;
  // Take the grants from the gdrproxy-grants line of listenerMetadata (written by `gdrproxy oci
  // prepare` or the runtime shim into the bundle's config.json, which the agent checks the
  // metadata against); `grants`, when given, is then the ceiling, whose entries may be '*'
  // globs ("uverbs*", as runtime.json's): a name no entry matches is refused.
  bool grants_from_metadata = false;
  std::optional<std::string> pidfd_getfd_group;
  std::string origin;  // "containers[2]" or "default", for notes
};

struct AgentConfig {
  std::vector<ContainerRule> containers;
  ContainerRule fallback;  // "default"; grants nothing unless the file says otherwise
  // "nvidia_abi_as": the release whose tables judge the node's NVIDIA driver, for a branch the
  // build's tables do not hold (`gdrproxy run --nvidia-abi-as`).
  std::optional<std::string> nvidia_abi_as;

  // Throws gdrproxy::Error naming the file and the field.
  static AgentConfig load_file(const std::string& path);
  static AgentConfig from_json_text(const std::string& text, const std::string& origin);
  // The first rule whose every present field matches, else `fallback`.
  const ContainerRule& rule_for(const std::string& id, const std::string& bundle,
                                const std::string& metadata) const;
};

}  // namespace gdrproxy::proxy
