// The `gdrproxy sysfs ...` subcommands. The CLI binary only wires this in; all behaviour lives
// in the sysfs library.
#pragma once

#include <CLI/CLI.hpp>

namespace gdrproxy::sysfs {

// Adds the `sysfs` subcommand tree to the root app. A subcommand's callback stores its process exit
// status in `exit_code`.
void register_commands(CLI::App& app, int& exit_code);

}  // namespace gdrproxy::sysfs
