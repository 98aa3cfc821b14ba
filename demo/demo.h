// `gdrproxy demo`: the main job on an embedded default, runnable on any machine.
#pragma once

#include <CLI/CLI.hpp>

namespace gdrproxy::demo {
void register_demo(CLI::App& app, int& exit_code);
}
