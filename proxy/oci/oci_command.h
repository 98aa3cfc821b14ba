// `gdrproxy oci ...`: what gdrproxy writes into OCI bundles (today: the seccomp profile).
#pragma once

#include <CLI/CLI.hpp>

namespace gdrproxy::proxy {

void add_oci_commands(CLI::App& app, int& exit_code);

}  // namespace gdrproxy::proxy
