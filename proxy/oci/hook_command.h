// `gdrproxy hook create-runtime|poststop`: the OCI hooks that move a container's RoCE rails into
// its network namespace and give them back. The container's state comes on stdin (runtime-spec
// config.md, "POSIX-platform Hooks"). The idea not to miss: each hook's journal lives in its
// container's directory under /run/gdrproxy/<id>/ and is claimed with O_EXCL, so two hooks never
// write one journal (several run for one container when a CDI spec names several NICs); and
// poststop is safe to run any number of times and later,
// by hand (`--id ID`), because a failing poststop is only a warning to the runtime.
#pragma once

#include <CLI/CLI.hpp>

namespace gdrproxy::proxy {

void add_hook_commands(CLI::App& app, int& exit_code);

}  // namespace gdrproxy::proxy
