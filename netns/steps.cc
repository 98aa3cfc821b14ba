// Counting the steps of a change (see steps.h).
#include "netns/steps.h"

#include <atomic>

namespace gdrproxy::netns {
namespace {

std::atomic<StepObserver> g_observer{nullptr};
std::atomic<int> g_steps{0};

}  // namespace

void set_step_observer(StepObserver observer) {
  g_observer.store(observer);
}

void step_done(const std::string& what) {
  const int step = ++g_steps;
  if (const StepObserver o = g_observer.load()) o(step, what);
}

}  // namespace gdrproxy::netns
