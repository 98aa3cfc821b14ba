// $PATH lookup (see program_path.h).
#include "base/program_path.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace gdrproxy {

std::string program_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* env = std::getenv("PATH");
  std::stringstream dirs(env ? env : "/usr/sbin:/usr/bin:/sbin:/bin");
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && ::access((d + "/" + name).c_str(), X_OK) == 0) return d + "/" + name;
  return {};
}

}  // namespace gdrproxy
