// The rail launcher's steps as the crash-safety tests watch them (`gdrproxy-testkit netns ...`):
//   GDRPROXY_NETNS_TRACE_STEPS=1  prints "step K: WHAT (+MS ms)" on stderr as each step completes;
//   GDRPROXY_NETNS_FAULT_AFTER=K  ends the process right after step K with _exit(86): no
//                                 unwinding, no rollback, what a SIGKILL or a power cut leaves.
// The shipped binary reads neither: only this tool installs the observer (netns/steps.h).
#pragma once

namespace gdrproxy::testkit {

// Exit status of a process stopped by GDRPROXY_NETNS_FAULT_AFTER.
constexpr int kFaultExitCode = 86;

// Installs the observer when either variable is set.
void watch_netns_steps_from_environment();

}  // namespace gdrproxy::testkit
