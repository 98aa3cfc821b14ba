// Starts the sandboxed command: fork, then in the child no_new_privs, the Landlock device guard,
// the seccomp filter, hand the listener fd to the parent over a socketpair, wait for the parent
// to be ready, exec. The parent serves notifications from the moment it holds the fd.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "proxy/devices/device_catalog.h"
#include "proxy/sandbox/notify_filter.h"

namespace gdrproxy::proxy {

struct LaunchSpec {
  std::vector<std::string> argv;
  bool landlock = true;
  FilterOptions filter;
};

struct Launched {
  pid_t pid = -1;
  int notify_fd = -1;
  int ready_fd = -1;  // write one byte to let the child exec
};

// Throws std::runtime_error when the child could not be set up (the child's reason included).
Launched launch_sandboxed(const LaunchSpec& spec, const DeviceCatalog& catalog,
                          const Grants& grants);

}  // namespace gdrproxy::proxy
