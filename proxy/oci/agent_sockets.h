// Where `gdrproxy agent` listens unless told otherwise. The idea not to miss: these are the one
// place the default paths are written: the agent binds them, and what runtimes are given (a
// profile's listenerPath, the judge hook's control socket, runtime.json's defaults) names them.
#pragma once

namespace gdrproxy::proxy {

inline constexpr const char* kAgentSocket = "/run/gdrproxy/agent.sock";    // runtimes' handovers
inline constexpr const char* kAgentCtlSocket = "/run/gdrproxy/agent.ctl";  // `gdrproxy agent ctl`
inline constexpr const char* kRailStateDir = "/run/gdrproxy";  // the rails' journals, per container

}  // namespace gdrproxy::proxy
