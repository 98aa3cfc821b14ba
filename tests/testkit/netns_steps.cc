// Fault points and step traces of the rail launcher, for the tests (see netns_steps.h).
#include "tests/testkit/netns_steps.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "netns/steps.h"

namespace gdrproxy::testkit {
namespace {

int g_fault_after = 0;  // 0: none
bool g_trace = false;

void on_step(int step, const std::string& what) {
  static const auto start = std::chrono::steady_clock::now();
  if (g_trace) {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "step %d: %s (+%.1f ms)\n", step, what.c_str(), ms);
  }
  if (step == g_fault_after) {
    std::fprintf(stderr, "fault injected after step %d (%s)\n", step, what.c_str());
    std::fflush(stderr);
    ::_exit(kFaultExitCode);
  }
}

}  // namespace

void watch_netns_steps_from_environment() {
  const char* fault = std::getenv("GDRPROXY_NETNS_FAULT_AFTER");
  const char* trace = std::getenv("GDRPROXY_NETNS_TRACE_STEPS");
  g_fault_after = fault ? std::atoi(fault) : 0;
  g_trace = trace && *trace == '1';
  if (g_fault_after > 0 || g_trace) netns::set_step_observer(on_step);
}

}  // namespace gdrproxy::testkit
