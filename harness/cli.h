// `gdrproxy harness prepare|attach|detach|status|teardown`: one node of a multi-node
// NCCL/UCX/NIXL job whose RoCE rails live in a container's network namespace (harness/gdr-harness
// is the same verbs for operators and scripts, with `run`).
#pragma once

#include <CLI/CLI.hpp>

namespace gdrproxy::harness {

void register_commands(CLI::App& app, int& exit_code);

}  // namespace gdrproxy::harness
