// What the agent gives one container: its session's configuration, planned from what the agent
// knows of it. The idea not to miss: this is a pure function of the operator's rule, the
// listenerMetadata (which the bundle check has tied to the bundle's config.json), the rule's
// policy and the device catalog; it reads no file and asks no kernel, so every rule key and
// every refusal is unit-tested (tests/agent/container_plan_test.cc). What is judged in the kernel
// is added afterwards by the judge (agent_judge.h).
#pragma once

#include <optional>
#include <string>

#include "proxy/agent/agent_config.h"
#include "proxy/devices/device_catalog.h"
#include "proxy/engine/session_config.h"
#include "proxy/policy/policy.h"

namespace gdrproxy::proxy {

// The agent's own settings that every container's session takes.
struct ContainerPlanOptions {
  std::optional<std::string> trace_dir;  // a rule's "trace" writes <trace_dir>/<id>.jsonl
  bool quiet = false;
  bool sync_wakeup = false;
  unsigned blocking_deadline_ms = 2000;
};

// The session of container `id`, matched to `rule`, under `policy` (the rule's, loaded by the
// caller): the rule's grants (or, with "grants_from_metadata", the metadata's gdrproxy-grants
// line within them), its mode, trace and pidfd_getfd brokering. Throws gdrproxy::Error when the
// container must be refused: metadata without a grants line when the rule takes them from there,
// a name beyond the rule's ceiling, a device the catalog lacks.
SessionConfig plan_container(const std::string& id, const ContainerRule& rule,
                             const std::string& metadata, Policy policy,
                             const DeviceCatalog& catalog, const ContainerPlanOptions& options);

}  // namespace gdrproxy::proxy
