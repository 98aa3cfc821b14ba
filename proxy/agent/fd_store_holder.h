// The fd store's holder: a process of the agent's binary that keeps containers' listeners (with
// their states, pidfds and received-id pages) and the agent's runtime socket across agent
// restarts; fd_store.h has the protocol and the reasons. The idea not to miss: it keeps nothing
// but its socket and its entries, and drops an entry the moment its process exits or its listener
// hangs up, so no entry outlives its process. The agent double-forks one (start_holder), which
// outlives it where its service manager kills only the agent (systemd's KillMode=process); where
// the runtime kills every process the agent leaves (a Kubernetes container), the holder runs in
// the foreground as a container of its own (run_holder: `gdrproxy agent fd-store PATH`).
#pragma once

#include <string>

namespace gdrproxy::proxy {

// Starts a holder at `path`: binds there (the socket exists when this returns), then hands the
// listening socket to a double-forked process that keeps no other fd of the caller's.
void start_holder(const std::string& path);

// Whether a holder answers at `path` (how the agent decides that one runs).
bool holder_answers(const std::string& path);

// Runs a holder at `path` in this process until SIGTERM or SIGINT, which drop every listener it
// holds; its exit code. Throws gdrproxy::Error, before binding anything, when a holder already
// answers there.
int run_holder(const std::string& path);

}  // namespace gdrproxy::proxy
