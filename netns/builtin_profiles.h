// The ARP profiles shipped in configs/netns/, embedded at build time, so that a profile named on
// the command line (multirail, loose, none) is found wherever the binary runs, with no path of
// the build machine compiled in. A file of the same name in a searched directory comes first.
#pragma once

#include <string_view>
#include <vector>

namespace gdrproxy::netns {

struct BuiltinProfile {
  std::string_view name;  // the file's name without .json
  std::string_view json;  // its text
};

const std::vector<BuiltinProfile>& builtin_profiles();

}  // namespace gdrproxy::netns
