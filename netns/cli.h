// The `gdrproxy netns ...` subcommands. The CLI binary only wires this in; all behaviour lives
// in the netns library.
#pragma once

#include <CLI/CLI.hpp>

namespace gdrproxy::netns {

// Adds the `netns` subcommand tree to the root app. A subcommand's callback stores its process exit
// status in `exit_code`.
void register_commands(CLI::App& app, int& exit_code);

}  // namespace gdrproxy::netns
