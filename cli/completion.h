// `gdrproxy completion bash`: prints a bash completion script made from the command's own CLI11
// tree. The idea not to miss: nothing in the script is written by hand per subcommand; every
// subcommand, option, flag and fixed choice comes from the parser that runs, so the script cannot
// go stale (the install step makes it from the binary it installs).
#pragma once

#include <CLI/CLI.hpp>
#include <ostream>

namespace gdrproxy::cli {

// Adds `completion` to the root app.
void register_completion(CLI::App& app, int& exit_code);

// Writes the bash script for `root` (its visible subcommands, their options and positionals) to
// `out`. Throws gdrproxy::Error on a name the script could not carry literally.
void write_bash_completion(const CLI::App& root, std::ostream& out);

}  // namespace gdrproxy::cli
