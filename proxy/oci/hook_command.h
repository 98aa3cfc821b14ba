// `gdrproxy hook create-runtime|poststop`: the OCI hooks that move a container's RoCE rails into
// its network namespace and give them back. The container's state comes on stdin (runtime-spec
// config.md, "POSIX-platform Hooks"). The idea not to miss: the journal of each container lives in
// its own directory under /run/gdrproxy/<id>/, made with mkdir (which fails if it exists), so two
// hooks can never write one journal; and poststop is safe to run any number of times and later,
// by hand (`--id ID`), because a failing poststop is only a warning to the runtime.
#pragma once

#include <CLI/CLI.hpp>

namespace gdrproxy::proxy {

void add_hook_commands(CLI::App& app, int& exit_code);

}  // namespace gdrproxy::proxy
