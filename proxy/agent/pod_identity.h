// The Kubernetes pod and container a bundle belongs to, as containerd's CRI plugin writes them
// into its config.json's annotations (io.kubernetes.cri.*). The idea not to miss: these are names
// the pod's creator chose, read for the operator's eyes only (`ctl list`, the agent's log), never
// for a decision; so only strings of bounded length are taken, anything else is left out, and
// they are printed escaped like every other tenant-chosen string.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace gdrproxy::proxy {

struct PodIdentity {
  // The pod (its sandbox): io.kubernetes.cri.sandbox-namespace, -name and -id.
  std::string pod_namespace, pod_name, pod_id;
  std::string container;  // io.kubernetes.cri.container-name
  std::string kind;       // io.kubernetes.cri.container-type: "sandbox", "container" or ""
  // True when the bundle named nothing of the above (a Docker or podman container).
  bool empty() const {
    return pod_namespace.empty() && pod_name.empty() && pod_id.empty() && container.empty() &&
           kind.empty();
  }
};

// The longest value taken (a Kubernetes name is at most 253 bytes); a longer one is left out.
constexpr size_t kMaxPodIdentityValue = 253;

// What a bundle's config.json (already parsed) says of its pod: each annotation taken when it is
// a non-empty string of at most kMaxPodIdentityValue bytes (the kind only when "sandbox" or
// "container"); absent, of another type, longer, or no "annotations" object: left empty.
PodIdentity pod_identity_of(const nlohmann::json& config);

// " pod NAMESPACE/NAME container NAME" for a log line, each name escaped (printable()); only the
// parts the bundle named; "" for none.
std::string pod_identity_said(const PodIdentity& p);

}  // namespace gdrproxy::proxy
