// How the demo runs a command: the one fork, exec and wait of the demo's steps. The idea not to
// miss: a command the demo starts never outlives it (PR_SET_PDEATHSIG) and, with a limit, never
// runs past it (SIGALRM), so a step that hangs ends the step, not the demo.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace gdrproxy::demo {

struct SpawnOptions {
  // The command runs with the stand-in device nodes (enter_standin_dev() in the child first).
  bool standin = false;
  // Seconds the command may run (0: no limit); past it, SIGALRM ends it.
  unsigned limit_s = 0;
  // When set, the command's stdout and stderr come through one pipe (so their order is kept): each
  // line is echoed to stdout and then handed to this callback, which may print more below it.
  std::function<void(const std::string&)> after_line;
};

// Runs `args` (args[0] a path) and waits for it. Returns its exit status, or 128 + the signal that
// ended it; 127 when it could not be started, 125 when the stand-in nodes could not be made.
int run_and_wait(const std::vector<std::string>& args, const SpawnOptions& options = {});

// Prints "$ ARGS" and runs them as run_and_wait does.
int run_shown(const std::vector<std::string>& args, const SpawnOptions& options = {});

}  // namespace gdrproxy::demo
