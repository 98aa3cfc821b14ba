// InFlightCall: every published call is answered exactly once, by the receiver's claim or by the
// watchdog's take, and a take never answers a call other than the one whose fields it read.
#include "proxy/engine/in_flight.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace gdrproxy::proxy {
namespace {

InFlightCall::Call call(uint64_t id, uint64_t start) {
  return {3, id, start, 100, 16};
}

TEST(InFlightCall, TheReceiverOrTheWatchdogAnswersACallNeverBoth) {
  InFlightCall f;
  EXPECT_FALSE(f.take_if_started_by(1000));  // nothing published
  f.publish(call(1, 50));
  EXPECT_FALSE(f.take_if_started_by(49));  // not overdue
  EXPECT_TRUE(f.claim());                  // the receiver answers it
  EXPECT_FALSE(f.take_if_started_by(1000));
  EXPECT_FALSE(f.claim());  // once
  EXPECT_FALSE(f.stuck());

  f.publish(call(2, 60));
  const auto taken = f.take_if_started_by(60);
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->id, 2u);
  EXPECT_EQ(taken->nfd, 3);
  EXPECT_EQ(taken->pid, 100u);
  EXPECT_EQ(taken->nr, 16);
  EXPECT_TRUE(f.stuck());
  EXPECT_FALSE(f.claim());                   // the watchdog answered it
  EXPECT_FALSE(f.take_if_started_by(1000));  // and only once
  EXPECT_TRUE(f.stuck());                    // until its handler returns
  f.finish();
  EXPECT_FALSE(f.stuck());

  f.publish(call(3, 70));
  EXPECT_FALSE(f.stuck());
  EXPECT_TRUE(f.claim());
}

// The receiver publishes and claims calls as fast as it can while a watchdog takes every call it
// sees: each call is answered once, and a take always names the call it took.
TEST(InFlightCall, ATakeRacingClaimsAndNewCallsAnswersEachCallOnce) {
  constexpr uint64_t kCalls = 200000;
  InFlightCall f;
  std::vector<std::atomic<int>> answers(kCalls + 1);
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    while (!done.load(std::memory_order_acquire)) {
      if (auto c = f.take_if_started_by(UINT64_MAX)) {
        ASSERT_LE(c->id, kCalls);
        EXPECT_EQ(c->start_ns, c->id * 10);  // the fields of one call, not of two
        answers[c->id].fetch_add(1);
      }
    }
  });
  for (uint64_t id = 1; id <= kCalls; ++id) {
    f.publish(call(id, id * 10));
    if (f.claim()) answers[id].fetch_add(1);
    f.finish();
  }
  done.store(true, std::memory_order_release);
  watchdog.join();
  for (uint64_t id = 1; id <= kCalls; ++id) ASSERT_EQ(answers[id].load(), 1) << "call " << id;
}

}  // namespace
}  // namespace gdrproxy::proxy
