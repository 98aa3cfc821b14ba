// The `gdrproxy proxy ...` subcommands. The CLI binary only wires this in; all behaviour lives
// in the proxy library.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gdrproxy::proxy {

// The words after the first "--" of gdrproxy's own command line. main() cuts them off before the
// option parser runs, so no word of the command a subcommand starts (`run`, `runtime`) can ever
// be read as one of gdrproxy's options, whatever options precede the "--".
struct CommandTail {
  std::optional<std::vector<std::string>> words;  // nullopt: there was no "--"
};

// The subcommands that start a command, and so own the words after "--".
inline const std::vector<std::string> kCommandSubcommands = {"run", "runtime"};

// Adds the engine's subcommands (run, agent, trace, ...) to the root app. A
// subcommand's callback stores its process exit status in `exit_code`.
void register_commands(CLI::App& app, int& exit_code, CommandTail& tail);

// The command a subcommand starts: the positional words before "--", then every word after it.
std::vector<std::string> command_words(std::vector<std::string> before, const CommandTail& tail);

}  // namespace gdrproxy::proxy
