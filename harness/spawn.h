// The programs the harness runs (ip, the OCI runtimes, podman, gdrproxy itself), with no shell
// between. The idea not to miss: a child's output goes where the verb's own lines go (log(),
// output.h), so a reclaim that shows only its failure hides its children's lines too; and a
// child that must act in the rail namespace enters it with setns() before it execs, as
// nsenter would.
#pragma once

#include <string>
#include <vector>

namespace gdrproxy::harness {

enum class ChildOutput {
  kLog,      // stdout and stderr appended to log()
  kDiscard,  // both to /dev/null
  kInherit,  // the harness's own stdout and stderr
};

struct Spawn {
  std::vector<std::string> argv;  // argv[0] looked up in PATH when it has no '/'
  ChildOutput output = ChildOutput::kLog;
  std::string netns;                    // a network namespace file to enter first ("" stays)
  std::vector<std::string> env_add;     // NAME=VALUE added to the harness's environment
  int timeout_s = 0;                    // killed (SIGKILL) after this many seconds; 0: none
  std::vector<std::string> env_remove;  // NAMEs taken out of it
};

// Runs it to its end. Returns its exit status (128+N when killed by signal N; 127 when it could
// not be started).
int run_program(const Spawn& s);
// The same, returning its stdout, and its stderr in `err` when given (else as `output` says).
int run_capturing(const Spawn& s, std::string& out, std::string* err = nullptr);

}  // namespace gdrproxy::harness
