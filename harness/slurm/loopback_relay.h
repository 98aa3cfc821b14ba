// A step's loopback services, reachable from its tasks' rail network namespace.
//
// The idea not to miss: slurmstepd serves the step's tasks on 127.0.0.1 (the PMIx server of
// --mpi=pmix listens there; PMIx 4 has no Unix socket transport), and a task that setns()es
// into the rail namespace has a loopback of its own, where nothing listens. Before the first
// task leaves the node's namespace, a relay process opens the same ports on the rail
// namespace's loopback and carries each connection to slurmstepd's, until slurmstepd exits.
#pragma once

#include <sys/types.h>

// Relays every TCP port slurmstepd (stepd) listens on at 127.0.0.1 into the network namespace
// rail_ns_fd. Called in each task before its setns(); a port another task's relay holds is left
// to it. Returns the number of ports this call relays (0 when there is nothing to relay or
// another task's relay has them), or -1 with a message in err.
int relay_step_loopback(pid_t stepd, int rail_ns_fd, char* err, size_t err_size);
