// The deadline watchdog's timer runs on the engine's loop, which outlives every session: the
// agent destroys a session on that loop (its container ended) while the watchdog's tick may be
// queued behind it, already expired, where cancel() no longer reaches it. The idea not to miss:
// that tick must then do nothing, not run on a destroyed watchdog (the agent soak crashed so,
// reading `ended_` through freed memory). Here the watchdog lives in storage the test zeroes
// after destroying it, so a tick that touches it dereferences null and the test crashes.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstring>
#include <new>
#include <thread>

#include "proxy/engine/deadline_watchdog.h"
#include "proxy/engine/in_flight.h"

namespace gdrproxy::proxy {
namespace {

TEST(DeadlineWatchdog, ATickQueuedBehindItsDestructionDoesNothing) {
  boost::asio::io_context loop;
  InFlightCall inflight;
  std::atomic<bool> ended{false};
  alignas(DeadlineWatchdog) unsigned char storage[sizeof(DeadlineWatchdog)];
  auto* w = new (storage) DeadlineWatchdog(inflight, 4, "[test] ", ended);  // ticks every 1 ms
  w->start(loop);
  // The session ends on the loop, as the agent's drop() does: cancel, destroy. The posted
  // handler is queued first; the timer, expired by then, is queued behind it when the loop runs.
  bool destroyed = false;
  boost::asio::post(loop, [&] {
    w->cancel();
    w->~DeadlineWatchdog();
    std::memset(storage, 0, sizeof storage);
    destroyed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  loop.run_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(destroyed);
}

}  // namespace
}  // namespace gdrproxy::proxy
