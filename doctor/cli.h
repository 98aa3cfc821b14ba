// `gdrproxy doctor`: the CLI only parses options into a Context and prints the Report; every
// check lives in the doctor library.
#pragma once

#include <CLI/CLI.hpp>

namespace gdrproxy::doctor {

// Adds `doctor` to the root app; its callback stores 0/1/2 (pass/warn/fail) in `exit_code`.
void register_commands(CLI::App& app, int& exit_code);

}  // namespace gdrproxy::doctor
