// --peer: this node's facts against another node's `gdrproxy doctor --json`: rails, HCAs,
// library versions, NCCL settings. Runs after every other family, on the facts they recorded.
//
// The idea not to miss: a multi-node job hangs, not fails, when nodes disagree: NCCL pairs rails
// by index and two NCCL versions speak different protocols. Only what both reports recorded is
// compared; a family one side did not run (no --pid there) is a WARN, not a match.
#pragma once

#include "doctor/context.h"
#include "doctor/report.h"

namespace gdrproxy::doctor {

void check_peer(const Context& ctx, Report& report);
// The comparison itself, on two facts objects (for tests and for the check above).
void compare_facts(const nlohmann::json& mine, const nlohmann::json& theirs,
                   const std::string& peer_name, Report& report);

}  // namespace gdrproxy::doctor
