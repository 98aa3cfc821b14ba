#include "proxy/engine/session_setup.h"

#include <utility>

#include "proxy/policy/dmabuf_provenance.h"

namespace gdrproxy::proxy {

SessionConfig planned_session(Policy policy, const DeviceCatalog& catalog,
                              const std::optional<std::vector<std::string>>& grants,
                              std::optional<Mode> mode) {
  SessionConfig c;
  c.grants = Grants::from_specs(catalog, grants ? grants : policy.grants());
  c.mode = mode.value_or(policy.mode().value_or(Mode::kEnforce));
  c.policy = std::move(policy);
  return c;
}

Enforcement enforcement_for(const SessionConfig& config, const NvidiaDriver& nv,
                            const DeviceCatalog& catalog, std::string& note) {
  NvidiaDriverFacts facts{nv.loaded, nv.known};
  for (const auto& n : catalog.nodes())
    if (n.device_class == DeviceClass::kNvidiaFrontend || n.device_class == DeviceClass::kNvidiaUvm)
      facts.has_nodes = true;
  facts.version = nv.version;
  if (nv.abi) facts.tables = nv.abi->version;
  facts.notice = nv.notice;
  return Enforcement::decide(config.mode, facts, config.allow_unknown_nvidia_driver, note);
}

KernelJudgement kernel_judgement_for(const SessionConfig& config, const NvidiaDriver& nv,
                                     const DeviceCatalog& catalog, bool tracing,
                                     const Enforcement& enforcement, std::string& note) {
  return kernel_judgement(
      {catalog, config.grants, config.policy, nv.abi, config.kernel_allow, config.lsm, config.mode,
       tracing, enforcement.nvidia_enforced(), config.judged_per_device},
      note);
}

CallHandlerSetup handler_setup(const SessionConfig& config, Engine& engine,
                               const DeviceCatalog& catalog, const Enforcement& enforcement,
                               KernelJudgement& judgement, bool tracing, bool observed) {
  const NvidiaDriver& nv = engine.nvidia();
  CallHandlerSetup h{config.policy, config.grants};
  h.enforcement = enforcement;
  h.tracing = tracing;
  h.observed = observed;
  h.broker_pidfd_getfd = config.broker_pidfd_getfd;
  h.nvidia_abi = nv.abi;
  h.nvidia_version_known = nv.version.has_value();
  h.nvidia_major = nv.major;
  h.all_gpus_granted = every_gpu_granted(catalog, config.grants);
  h.unread_uvm = std::move(judgement.unread_uvm);
  h.unread_frontend = std::move(judgement.unread_frontend);
  h.dmabuf_exporters = dmabuf_exporters(config.policy);
  h.next_seq = [&engine] { return engine.next_seq(); };
  return h;
}

}  // namespace gdrproxy::proxy
