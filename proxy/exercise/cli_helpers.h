// Registers the hidden test helpers (`exercise`, `standin`) on the CLI root.
#pragma once

#include <CLI/CLI.hpp>

#include "proxy/cli.h"

namespace gdrproxy::proxy {

void register_test_helpers(CLI::App& app, int& exit_code, const CommandTail& tail);

}  // namespace gdrproxy::proxy
