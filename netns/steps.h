// The steps of a multi-step change (`move`, and the configuration `restore` re-applies), counted
// as each completes. The idea not to miss: a process may watch them through one observer, set
// before the change starts; the shipped binary sets none (a step is then a counter increment),
// and the test tool (gdrproxy-testkit netns ...) sets one that prints each step or ends the
// process abruptly after a chosen one, which is how the crash-safety tests stop `move` at every
// point between two steps.
#pragma once

#include <string>

namespace gdrproxy::netns {

// Called after each step with its number (from 1, counted per process) and what it did.
using StepObserver = void (*)(int step, const std::string& what);

// Sets the process's one observer (nullptr: none).
void set_step_observer(StepObserver observer);

// Marks the end of one step of a multi-step change.
void step_done(const std::string& what);

}  // namespace gdrproxy::netns
