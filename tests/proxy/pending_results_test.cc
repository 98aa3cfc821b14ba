// PendingResults: an entry is completed once, by the result of its own call only, and a
// receiver filling entries while the loop completes them loses and repeats none.
#include "proxy/engine/pending_results.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace gdrproxy::proxy {
namespace {

uint32_t add(PendingResults& p, uint64_t seq, uint32_t tid) {
  const uint32_t i = p.take();
  PendingResults::Call& c = p.at(i);
  c.record.seq = seq;
  c.tid = tid;
  p.publish(i);
  return i;
}

TEST(PendingResults, AResultClaimsOnlyItsOwnCallOnce) {
  PendingResults p;
  const uint32_t a = add(p, 10, 100);
  const uint32_t b = add(p, 11, 101);
  EXPECT_NE(a, b);
  EXPECT_EQ(p.claim(a, 11), nullptr);      // another call's sequence number
  EXPECT_EQ(p.claim(b + 7, 11), nullptr);  // no such entry
  PendingResults::Call* c = p.claim(a, 10);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->tid, 100u);
  EXPECT_EQ(p.claim(a, 10), nullptr);  // claimed already: completed once
  p.release(a);
  EXPECT_EQ(p.claim(a, 10), nullptr);  // free
  // The freed entry is reused; the stale result of its first call does not claim the new one.
  EXPECT_EQ(add(p, 12, 102), a);
  EXPECT_EQ(p.claim(a, 10), nullptr);
  EXPECT_NE(p.claim(a, 12), nullptr);
}

TEST(PendingResults, OnlyPublishedEntriesWaitOrAreClaimed) {
  PendingResults p;
  const uint32_t taken = p.take();
  p.at(taken).record.seq = 5;
  EXPECT_EQ(p.claim(taken, 5), nullptr);  // still being filled by its taker
  EXPECT_TRUE(p.waiting().empty());
  p.publish(taken);
  const uint32_t other = add(p, 6, 60);
  const std::vector<PendingResults::Waiting> w = p.waiting();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].index, taken);
  EXPECT_EQ(w[0].seq, 5u);
  EXPECT_EQ(w[1].index, other);
  EXPECT_EQ(w[1].tid, 60u);
  ASSERT_NE(p.claim(other, 6), nullptr);
  EXPECT_EQ(p.waiting().size(), 1u);  // a claimed entry no longer waits
}

TEST(PendingResults, FilledOnOneThreadCompletedOnAnother) {
  // A receiver adds calls while the loop claims them as their results come: each is completed
  // exactly once, with the fields its receiver wrote, and entries are reused (the set stays
  // as small as the calls waiting at once).
  PendingResults p;
  constexpr uint64_t kCalls = 200000;
  std::mutex mu;
  std::vector<std::pair<uint32_t, uint64_t>> results;  // "the ring": index, seq
  std::atomic<bool> done{false};
  std::thread receiver([&] {
    for (uint64_t seq = 1; seq <= kCalls; ++seq) {
      const uint32_t i = add(p, seq, static_cast<uint32_t>(seq * 3));
      std::lock_guard<std::mutex> lock(mu);
      results.emplace_back(i, seq);
    }
    done = true;
  });
  uint64_t completed = 0, wrong = 0;
  std::vector<std::pair<uint32_t, uint64_t>> batch;
  for (;;) {
    // Read before taking the batch: once the receiver is done, this batch holds the last ones.
    const bool finished = done;
    batch.clear();
    {
      std::lock_guard<std::mutex> lock(mu);
      batch.swap(results);
    }
    for (const auto& [i, seq] : batch) {
      PendingResults::Call* c = p.claim(i, seq);
      if (!c || c->tid != seq * 3 || c->record.seq != seq) {
        ++wrong;
        continue;
      }
      ++completed;
      EXPECT_EQ(p.claim(i, seq), nullptr);
      p.release(i);
    }
    if (finished && batch.empty()) break;
  }
  receiver.join();
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(completed, kCalls);
  EXPECT_TRUE(p.waiting().empty());
}

}  // namespace
}  // namespace gdrproxy::proxy
