// Ties a container the runtime names to the OCI bundle it was created from. The idea not to miss:
// the state a runtime sends is only a message, so before a listener is adopted the agent reads
// the bundle's own config.json (written by the operator's tooling, outside any container) and
// requires that it hands its seccomp listener to this agent's socket with exactly the metadata
// the message carries; rules that match on metadata then match on what the bundle says.
#pragma once

#include <string>

#include "proxy/agent/pod_identity.h"
#include "proxy/sandbox/profile_untrapped.h"

namespace gdrproxy::proxy {

// True when <bundle>/config.json is a regular file (no symlink as its last component, at most
// 4 MiB, valid JSON) whose linux.seccomp.listenerPath is `socket_path` (the same socket by
// device and inode, however spelt) and whose linux.seccomp.listenerMetadata (absent = "") equals
// `metadata`. Otherwise false, with `why` naming the bundle and what did not hold.
// `untrapped` (when given) receives what its profile lets ioctl requests do without a trap
// (proxy/sandbox/profile_untrapped.h), for the agent to compare with the container's policy.
// `pod` (when given) receives the Kubernetes pod and container its annotations name
// (pod_identity.h; empty for a bundle that names none).
bool bundle_hands_listener_to(const std::string& bundle, const std::string& socket_path,
                              const std::string& metadata, std::string& why,
                              ProfileUntrapped* untrapped = nullptr, PodIdentity* pod = nullptr);

}  // namespace gdrproxy::proxy
