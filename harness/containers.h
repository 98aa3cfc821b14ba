// The containers and agent a node's runs left under <state>/run, removed. The idea not to miss:
// a run's container is found from its own directory (run/ctr-KEY: runtime.name says which
// runtime made it, runtime/ is runc's or crun's state root) and the agent from run/agent.pid, an
// owner file (base/owner_file.h), so a killed run's container and agent are removed by
// whoever cleans up next (the run's own exit, the last detach, a reclaiming attach, teardown),
// and a reused pid is never signalled. Making them is `run`'s (harness/lib/oci-container.sh).
#pragma once

#include <string>

#include "harness/identity.h"

namespace gdrproxy::harness {

// The container of KEY ("node", "rank-N", a step key): gdrh-NODE, gdrh-NODE-rN.
std::string container_id(const Identity& id, const std::string& key);

// Deletes container KEY (killed first) with the runtime that made it and removes its directory.
// false (with a line) when the runtime still knows it afterwards. Nothing to do is true.
bool delete_container(const Identity& id, const std::string& key);

// Stops the node's agent (SIGTERM, SIGKILL after 5 s) if the one recorded is alive.
void stop_agent(const Identity& id);

// Every container of the node deleted and the agent stopped; false if one could not be deleted.
bool delete_all_containers(const Identity& id);

}  // namespace gdrproxy::harness
