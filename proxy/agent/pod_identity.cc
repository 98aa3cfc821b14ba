// Taking the CRI's pod and container names out of a bundle's annotations: each a bounded string
// or nothing.
#include "proxy/agent/pod_identity.h"

#include <nlohmann/json.hpp>

#include "base/escape.h"

namespace gdrproxy::proxy {
namespace {

std::string annotation(const nlohmann::json& annotations, const char* key) {
  const auto it = annotations.find(key);
  if (it == annotations.end() || !it->is_string()) return {};
  const auto& s = it->get_ref<const std::string&>();
  return s.size() <= kMaxPodIdentityValue ? s : std::string();
}

}  // namespace

PodIdentity pod_identity_of(const nlohmann::json& config) {
  PodIdentity p;
  if (!config.is_object()) return p;
  const auto a = config.find("annotations");
  if (a == config.end() || !a->is_object()) return p;
  p.pod_namespace = annotation(*a, "io.kubernetes.cri.sandbox-namespace");
  p.pod_name = annotation(*a, "io.kubernetes.cri.sandbox-name");
  p.pod_id = annotation(*a, "io.kubernetes.cri.sandbox-id");
  p.container = annotation(*a, "io.kubernetes.cri.container-name");
  p.kind = annotation(*a, "io.kubernetes.cri.container-type");
  if (p.kind != "sandbox" && p.kind != "container") p.kind.clear();
  return p;
}

std::string pod_identity_said(const PodIdentity& p) {
  std::string out;
  if (!p.pod_namespace.empty() || !p.pod_name.empty())
    out += " pod " + printable(p.pod_namespace) + "/" + printable(p.pod_name);
  if (!p.container.empty()) out += " container " + printable(p.container);
  return out;
}

}  // namespace gdrproxy::proxy
