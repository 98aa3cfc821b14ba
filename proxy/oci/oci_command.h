// `gdrproxy oci ...`: what gdrproxy writes into OCI bundles (today: the seccomp profile).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gdrproxy::proxy {

void add_oci_commands(CLI::App& app, int& exit_code);
// `gdrproxy cdi generate`.
void add_cdi_command(CLI::App& app, int& exit_code);
// `gdrproxy runtime [options] -- RUNTIME-ARGS...`: the words after "--" come in `runtime_args`.
void add_runtime_command(CLI::App& app, int& exit_code,
                         const std::optional<std::vector<std::string>>& runtime_args);

}  // namespace gdrproxy::proxy
