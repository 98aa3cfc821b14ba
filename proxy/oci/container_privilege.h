// Whether a container's config.json makes it unconfined: root on the node, able to undo every
// guard gdrproxy sets (the device cgroup, the synthetic /sys, the seccomp listener). The idea not
// to miss: this reads what the runtime will apply (the spec), not a "privileged" flag, which no
// OCI spec carries: Docker's --privileged and Kubernetes' securityContext.privileged arrive as an
// allow-all device rule, every capability and every host device; a user namespace makes the
// capabilities the container's own, so a container with one is never judged unconfined here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gdrproxy::proxy {

struct Unconfinement {
  // What makes it unconfined, each a short phrase naming the spec field ("the device cgroup
  // allows every device (linux.resources.devices)", "CAP_SYS_ADMIN"); empty: confined.
  std::vector<std::string> reasons;
  bool unconfined() const { return !reasons.empty(); }
  std::string joined() const;  // "a; b; c"
};

// The capabilities that, held in the initial user namespace, let a process undo the guards:
// mount and unmount over /sys and /dev and load BPF programs (SYS_ADMIN), load kernel modules
// (SYS_MODULE), reach devices below their drivers (SYS_RAWIO: /dev/mem, port I/O). CAP_MKNOD
// joins them only beside an allow-all device rule (then any node can be made and opened).
// CAP_IPC_LOCK (pinned memory) and CAP_NET_RAW (raw sockets) are fine.
inline constexpr std::string_view kUnconfiningCaps[] = {"CAP_SYS_ADMIN", "CAP_SYS_MODULE",
                                                        "CAP_SYS_RAWIO"};

// Judges a config.json's text; `origin` names it in errors. Throws gdrproxy::Error when the text
// is not a JSON object or a judged field has the wrong type.
Unconfinement container_unconfinement(std::string_view config_json, const std::string& origin);

// The one line that refuses such a container asking for `devices` (joined names), saying why and
// what to do instead.
std::string unconfined_refusal(const Unconfinement& u, const std::string& devices);

}  // namespace gdrproxy::proxy
