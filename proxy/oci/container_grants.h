// One container's grant set, the single object every piece of the OCI integration derives its
// part from: the device nodes of /dev, the device cgroup rules, the metadata the agent reads its
// session grants from. The idea not to miss: the device cgroup is the containers' kernel guard
// (runtimes apply no Landlock), so it denies every RDMA and NVIDIA device number, by driver major
// and by the exact number of every catalogued node, and then allows back only the granted uverbs
// and rdma_cm nodes. NVIDIA nodes are never allowed in the cgroup: the agent opens them in the
// host's cgroup and injects the fd; their nodes exist in /dev only so that paths resolve.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/devices/device_catalog.h"

namespace gdrproxy::proxy {

// The metadata key that carries a container's grants ("gdrproxy-grants=uverbs0,rdma_cm").
inline constexpr std::string_view kGrantsMetadataKey = "gdrproxy-grants";
// The metadata key that marks a container its operator accepted unconfined, with what makes it
// so ("gdrproxy-unconfined=CAP_SYS_ADMIN; no user namespace"): proxy/oci/container_privilege.h.
inline constexpr std::string_view kUnconfinedMetadataKey = "gdrproxy-unconfined";

struct ContainerGrants {
  std::vector<DeviceNode> nodes;  // granted, brokerable nodes of the catalog

  // Resolves names (or /dev paths) against `catalog`; throws gdrproxy::Error naming an
  // unknown or never-grantable device.
  static ContainerGrants resolve(const DeviceCatalog& catalog,
                                 const std::vector<std::string>& names);
  std::vector<std::string> names() const;

  // linux.devices entries: a node for every granted device.
  nlohmann::json spec_devices() const;
  // linux.resources.devices rules appended after the bundle's own: deny every guarded driver's
  // major (and rdma_cm's misc minor) and every catalogued node's number, then allow the granted
  // nodes back: uverbs and rdma_cm to be made and opened ("rwm"), NVIDIA ones only to be made
  // ("m": the runtime creates the node, the agent opens it).
  nlohmann::json cgroup_rules(const DeviceCatalog& catalog) const;
};

// "KEY=value" merged into `metadata` (newline-separated key=value lines; an existing KEY line is
// replaced), and the value of the KEY line of `metadata` (nullopt: none).
std::string metadata_with_line(const std::string& metadata, std::string_view key,
                               const std::string& value);
std::optional<std::string> metadata_line(const std::string& metadata, std::string_view key);
// "gdrproxy-grants=a,b" merged into `metadata` (newline-separated key=value lines; an existing
// gdrproxy-grants line is replaced).
std::string metadata_with_grants(const std::string& metadata,
                                 const std::vector<std::string>& names);
// The names of the gdrproxy-grants line of `metadata`; nullopt when it has none.
std::optional<std::vector<std::string>> grants_in_metadata(const std::string& metadata);

}  // namespace gdrproxy::proxy
