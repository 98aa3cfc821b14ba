// A session handed an fd that is not a seccomp listener (an eventfd: RECV answers ENOTTY) must
// not retry RECV for ever: the receiver ends, its listener counts as hung up, and the session
// ends. The agent refuses such fds at the door (listener_check.h); this is the session's own
// guard, for any path that reaches it.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "proxy/devices/device_catalog.h"
#include "proxy/engine/engine.h"
#include "proxy/engine/session.h"
#include "proxy/policy/policy.h"

namespace gdrproxy::proxy {
namespace {

using namespace std::chrono_literals;

// This process's CPU time (user and system).
std::chrono::microseconds cpu_time() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return std::chrono::seconds(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         std::chrono::microseconds(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

TEST(SessionReceiver, ANonListenerEndsItsSessionInsteadOfSpinning) {
  const std::string empty_dev = std::filesystem::temp_directory_path() / "gdrproxy-no-dev";
  std::filesystem::create_directories(empty_dev);
  Engine engine(DeviceCatalog::scan(empty_dev));
  SessionConfig cfg;
  cfg.name = "not-a-listener";
  cfg.policy = Policy::builtin_default();
  cfg.quiet = true;
  Session session(engine, std::move(cfg));
  bool ended = false;
  session.on_end([&] { ended = true; });
  session.add_listener(::eventfd(0, EFD_CLOEXEC));
  const auto cpu_before = cpu_time();
  // The end is posted to the engine's loop; it has nothing else to do, so it is polled.
  for (auto until = std::chrono::steady_clock::now() + 2s;
       !ended && std::chrono::steady_clock::now() < until;) {
    engine.io().restart();
    engine.io().poll();
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(ended) << "the session of an eventfd did not end";
  EXPECT_TRUE(session.ended());
  EXPECT_TRUE(session.stop());
  // Before, its receiver retried every 10 ms for ever; now it spent next to nothing.
  EXPECT_LT(cpu_time() - cpu_before, 200ms);
  std::filesystem::remove(empty_dev);
}

}  // namespace
}  // namespace gdrproxy::proxy
