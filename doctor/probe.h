// The library probe: when no --pid is given, a short-lived child of the doctor dlopen()s the
// libraries a job would load, and its /proc/CHILD/maps shows which files this node's (or this
// container's) loader binds, with the same analysis as a live rank's.
//
// The idea not to miss: the probe is not a rank. It loads by SONAME with the doctor's own
// environment (LD_LIBRARY_PATH, ld.so.cache), not the job's, and is killed after a bounded time
// whatever a library's constructor does: a dlopen() that hangs (a driver library waiting on a
// device) becomes a finding, never a hung doctor. The child is always killed and reaped before
// the probe returns (or, stuck in the kernel, left killed for init to reap).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace gdrproxy::doctor {

struct ProbeResult {
  int pid = -1;                     // the child (gone when run_probe returns)
  std::string maps;                 // its /proc/PID/maps, read before it was killed
  std::vector<std::string> loaded;  // names dlopen() loaded
  std::vector<std::string> absent;  // "name: dlerror()" for the others
  std::string stuck;                // the name whose dlopen() had not returned at the deadline
  bool timed_out = false;           // the child did not finish in time
  std::string error;                // no child ran (pipe/fork failed) or it died; "" otherwise
};

// Forks a child that dlopen()s each of `libraries` in turn (RTLD_LAZY | RTLD_LOCAL, as a program
// linking them would bind), waits at most `timeout` for it, reads `proc_root`/CHILD/maps, kills
// and reaps it. The doctor must be single-threaded when it calls this (it forks without exec).
ProbeResult run_probe(const std::vector<std::string>& libraries, std::chrono::milliseconds timeout,
                      const std::string& proc_root = "/proc");

}  // namespace gdrproxy::doctor
