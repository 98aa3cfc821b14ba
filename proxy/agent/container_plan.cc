#include "proxy/agent/container_plan.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "base/error.h"
#include "proxy/engine/session_setup.h"
#include "proxy/oci/container_grants.h"
#include "proxy/oci/container_state.h"
#include "proxy/policy/glob.h"

namespace gdrproxy::proxy {

SessionConfig plan_container(const std::string& id, const ContainerRule& rule,
                             const std::string& metadata, Policy policy,
                             const DeviceCatalog& catalog, const ContainerPlanOptions& options) {
  std::optional<std::vector<std::string>> names = rule.grants;  // nullopt: the policy's
  if (rule.grants_from_metadata) {
    const auto asked = grants_in_metadata(metadata);
    if (!asked) throw Error("its metadata has no gdrproxy-grants line");
    if (rule.grants)
      for (const std::string& n : *asked)
        if (std::none_of(rule.grants->begin(), rule.grants->end(),
                         [&](const std::string& g) { return glob_match(g.c_str(), n.c_str()); }))
          throw Error("its metadata asks for " + n + ", which rule " + rule.origin +
                      " does not allow");
    names = *asked;
  }
  SessionConfig cfg = planned_session(std::move(policy), catalog, names, rule.mode);
  cfg.name = id;
  if (rule.trace && options.trace_dir)
    cfg.trace_json = *options.trace_dir + "/" + container_file_name(id) + ".jsonl";
  cfg.quiet = options.quiet;
  cfg.sync_wakeup = options.sync_wakeup;
  cfg.blocking_deadline_ms = options.blocking_deadline_ms;
  cfg.broker_pidfd_getfd = rule.broker_pidfd_getfd;
  // The runtime accepted it unconfined (runtime.json "accept_unconfined"): said and traced.
  cfg.unconfined = metadata_line(metadata, kUnconfinedMetadataKey);
  return cfg;
}

}  // namespace gdrproxy::proxy
