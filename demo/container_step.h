// The demo's container step: a runc container on the stand-in nodes, served by `gdrproxy agent`.
#pragma once

#include <string>

namespace gdrproxy::demo {

// Runs the step (root and runc needed; otherwise says why it is skipped) and returns its status.
int container_step(const std::string& self);

}  // namespace gdrproxy::demo
