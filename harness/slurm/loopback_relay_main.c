// gdr-loopback-relay: the Slurm plugin's loopback relay as a command, for launchers other than
// slurmstepd (Open MPI's orted under `mpirun ... gdr-harness run`): the TCP ports a process
// listens on at 127.0.0.1 become reachable on the loopback of another network namespace, until
// that process exits. The idea not to miss: it returns once the relay listens (a background
// process keeps it), so the caller can start its namespace's programs right after.
// Usage: gdr-loopback-relay PID NETNS_PATH
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loopback_relay.h"

int main(int argc, char** argv) {
  if (argc != 3 || atoi(argv[1]) <= 0) {
    fprintf(stderr,
            "usage: gdr-loopback-relay PID NETNS_PATH\n"
            "Relays the TCP ports process PID listens on at 127.0.0.1 into the network namespace\n"
            "at NETNS_PATH (its loopback), until PID exits. Prints how many ports it relays.\n");
    return 2;
  }
  int ns = open(argv[2], O_RDONLY | O_CLOEXEC);
  if (ns < 0) {
    perror(argv[2]);
    return 1;
  }
  char err[256] = "";
  int n = relay_step_loopback((pid_t)atoi(argv[1]), ns, err, sizeof err);
  close(ns);
  if (n < 0) {
    fprintf(stderr, "gdr-loopback-relay: %s\n", err);
    return 1;
  }
  printf("%d\n", n);
  return 0;
}
