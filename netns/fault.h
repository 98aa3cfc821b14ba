// Fault injection for crash-safety tests: numbered points between the steps of `move`.
//
// GDRPROXY_NETNS_FAULT_AFTER=K makes the process die abruptly (_exit, no unwinding, no
// rollback: what a SIGKILL or power cut leaves) right after step K. GDRPROXY_NETNS_TRACE_STEPS=1
// prints every step as it completes, so a test can count them. Neither is set in production.
#pragma once

#include <string>

namespace gdrproxy::netns {

// Marks the end of one step of a multi-step change.
void step_done(const std::string& what);

// Exit status of a process stopped by an injected fault.
constexpr int kFaultExitCode = 86;

}  // namespace gdrproxy::netns
