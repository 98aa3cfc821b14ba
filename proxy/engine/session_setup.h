// How a session is set up from its config and the engine, before it serves: the unknown-driver
// rule's verdict, what the kernel judges for it, and the call handler's setup. The idea not to
// miss: each is decided once, from the catalog the session began with, so the grants, the
// filter's untrapped requests, the LSM tables and the handler's checks all agree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proxy/devices/device_catalog.h"
#include "proxy/engine/call_handler.h"
#include "proxy/engine/engine.h"
#include "proxy/engine/kernel_judgement.h"
#include "proxy/engine/session_config.h"
#include "proxy/policy/enforcement.h"

namespace gdrproxy::proxy {

// A session's grants and mode, chosen here alone for `run`, the agent and the profile writers: the
// grants asked for (a command line's, an agent rule's) over the policy's own, nullopt meaning the
// policy's; the mode asked for, else the policy's, else enforce. Throws naming a device the
// catalog lacks.
SessionConfig planned_session(Policy policy, const DeviceCatalog& catalog,
                              const std::optional<std::vector<std::string>>& grants,
                              std::optional<Mode> mode);

// The unknown-driver rule for the loaded NVIDIA driver and the catalog's nodes; throws
// gdrproxy::Error where enforce mode must not start, sets `note` where NVIDIA calls are
// trace-only.
Enforcement enforcement_for(const SessionConfig& config, const NvidiaDriver& nvidia,
                            const DeviceCatalog& catalog, std::string& note);

// What the kernel judges for this session (kernel_judgement.h).
KernelJudgement kernel_judgement_for(const SessionConfig& config, const NvidiaDriver& nvidia,
                                     const DeviceCatalog& catalog, bool tracing,
                                     const Enforcement& enforcement, std::string& note);

// The call handler's setup; takes the judgement's unread requests. `observed`: an observer
// completes traced calls at their exit.
CallHandlerSetup handler_setup(const SessionConfig& config, Engine& engine,
                               const DeviceCatalog& catalog, const Enforcement& enforcement,
                               KernelJudgement& judgement, bool tracing, bool observed);

}  // namespace gdrproxy::proxy
