// The `gdrproxy proxy ...` subcommands. The CLI binary only wires this in; all behaviour lives
// in the proxy library.
#pragma once

#include <CLI/CLI.hpp>

namespace gdrproxy::proxy {

// Adds the `proxy` subcommand tree to the root app. A subcommand's callback stores its process exit
// status in `exit_code`.
void register_commands(CLI::App& app, int& exit_code);

}  // namespace gdrproxy::proxy
