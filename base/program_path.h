// Where a program named without a slash is found: the first executable of that name in the
// directories of $PATH (the shell's default list when $PATH is unset), as execvp would find it.
#pragma once

#include <string>

namespace gdrproxy {

// `name` itself when it holds a slash; "" when no directory of $PATH has it executable.
std::string program_path(const std::string& name);

}  // namespace gdrproxy
