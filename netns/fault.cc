// Fault points (see fault.h).
#include "netns/fault.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace gdrproxy::netns {

void step_done(const std::string& what) {
  static int count = 0;
  static const char* fault_env = std::getenv("GDRPROXY_NETNS_FAULT_AFTER");
  static const char* trace_env = std::getenv("GDRPROXY_NETNS_TRACE_STEPS");
  ++count;
  static const auto start = std::chrono::steady_clock::now();
  if (trace_env && *trace_env == '1') {
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "step %d: %s (+%.1f ms)\n", count, what.c_str(), ms);
  }
  if (fault_env && std::atoi(fault_env) == count) {
    std::fprintf(stderr, "fault injected after step %d (%s)\n", count, what.c_str());
    std::fflush(stderr);
    _exit(kFaultExitCode);
  }
}

}  // namespace gdrproxy::netns
