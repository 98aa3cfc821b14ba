// Where `gdrproxy agent` listens unless told otherwise. The idea not to miss: these are the one
// place the default paths are written: the agent binds them, and what runtimes are given (a
// profile's listenerPath, the judge hook's control socket, runtime.json's defaults) names them.
#pragma once

namespace gdrproxy::proxy {

inline constexpr const char* kAgentSocket = "/run/gdrproxy/agent.sock";    // runtimes' handovers
inline constexpr const char* kAgentCtlSocket = "/run/gdrproxy/agent.ctl";  // `gdrproxy agent ctl`
inline constexpr const char* kRailStateDir = "/run/gdrproxy";  // the rails' journals, per container
// What each runtime binary supports, as the shim found it (runtime_feature_cache.h); the dot keeps
// it apart from the rails' journals, named by container ids, which never start with one.
inline constexpr const char* kRuntimeFeatureDir = "/run/gdrproxy/.runtimes";

}  // namespace gdrproxy::proxy
