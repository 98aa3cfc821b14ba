// The fd store's holder: a double-forked process of the agent's binary that keeps containers'
// listeners (with their states, pidfds and received-id pages) and the agent's runtime socket
// across agent restarts; fd_store.h has the protocol and the reasons. The idea not to miss: it
// keeps nothing but its socket and its entries, and drops an entry the moment its process exits
// or its listener hangs up, so no entry outlives its process.
#pragma once

#include <string>

namespace gdrproxy::proxy {

// Starts a holder at `path`: binds there (the socket exists when this returns), then hands the
// listening socket to a double-forked process that keeps no other fd of the caller's.
void start_holder(const std::string& path);

}  // namespace gdrproxy::proxy
