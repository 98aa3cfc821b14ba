// `gdrproxy harness prepare|attach|detach|status|teardown`: one node of a multi-node
// NCCL/UCX/NIXL job whose RoCE rails live in a container's network namespace (harness/gdr-harness
// is the same verbs for operators and scripts, with `run`).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gdrproxy::harness {

// `run_tail`: the words after `harness run [--]` (main.cc takes them off before parsing), read
// when run's callback runs.
void register_commands(CLI::App& app, int& exit_code,
                       const std::optional<std::vector<std::string>>& run_tail);

}  // namespace gdrproxy::harness
