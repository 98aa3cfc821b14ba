// Building the shared Error from an errno (see error.h).
#include "base/error.h"

#include <cstring>

namespace gdrproxy {

void throw_errno(const std::string& what, int errno_value) {
  throw Error(what + ": " + std::strerror(errno_value), errno_value);
}

}  // namespace gdrproxy
