// `gdrproxy hook create-runtime|poststop`: the OCI hooks that move a container's RoCE rails into
// its network namespace and give them back. The container's state comes on stdin (runtime-spec
// config.md, "POSIX-platform Hooks"). The idea not to miss: each hook's journal lives in its
// container's directory under /run/gdrproxy/<id>/ and is claimed with O_EXCL, so two hooks never
// write one journal (several run for one container when a CDI spec names several NICs); the
// container's network namespace is known by the bundle's path for it, or pinned by a bind mount
// beside the journal when the bundle names none (Docker, ctr), so poststop finds the rails after
// the container's processes are gone; and poststop is safe to run any number of times and
// later, by hand (`--id ID`), or for every container whose process is gone (`hook sweep`, and
// `gdrproxy agent` at start), because a failing poststop is only a warning to the runtime.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace gdrproxy::proxy {

void add_hook_commands(CLI::App& app, int& exit_code);

// Gives back the rails of every container under `state_dir` whose process is gone (its poststop
// never ran, or failed): the directory's owner file names the container's process by pid and
// start time, so a reused pid is not mistaken for it. Reports one line per container to
// `report`; returns how many could not be fully given back.
int restore_rails_of_gone_containers(const std::string& state_dir,
                                     const std::function<void(const std::string&)>& report);

}  // namespace gdrproxy::proxy
