// The call a session is handling, for the watchdog to answer if it outlives its deadline. The
// receiver publishes each call and claims it back when it answers; the watchdog, on the engine's
// loop, takes an overdue call. Exactly one of the two answers a call, with no lock on the call's
// path: one atomic word holds the call's generation and two bits (open; taken by the watchdog),
// so the watchdog's take succeeds only on the very call whose fields it read (a claim, or a later
// call published meanwhile, changes the word and fails its compare-and-swap).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

namespace gdrproxy::proxy {

class InFlightCall {
 public:
  struct Call {
    int nfd = -1;  // the listener that received it
    uint64_t id = 0;
    uint64_t start_ns = 0;  // CLOCK_MONOTONIC (or its coarse reading), ns
    uint32_t pid = 0;
    int nr = 0;  // the syscall, for the watchdog's line
  };

  // The receiver, before handling a call (one receiver at a time: the session's mutex).
  void publish(const Call& c) {
    // Release, each: a watchdog that reads one of them has seen the claim that came before it.
    nfd_.store(c.nfd, std::memory_order_release);
    id_.store(c.id, std::memory_order_release);
    start_ns_.store(c.start_ns, std::memory_order_release);
    pid_.store(c.pid, std::memory_order_release);
    nr_.store(c.nr, std::memory_order_release);
    // The next generation, open; whoever sees it sees the fields above.
    const uint64_t gen = state_.load(std::memory_order_relaxed) & ~kBits;
    state_.store(gen + kGeneration + kOpen, std::memory_order_release);
  }

  // The receiver, about to answer: true if the call was still open (now closed), false if the
  // watchdog took it.
  bool claim() { return (state_.fetch_and(~kOpen, std::memory_order_acq_rel) & kOpen) != 0; }

  // The receiver, once its handler has returned: the session is no longer stuck. A plain read
  // first: no locked instruction on a call the watchdog left alone.
  void finish() {
    if (state_.load(std::memory_order_relaxed) & kTaken)
      state_.fetch_and(~kTaken, std::memory_order_release);
  }

  // The watchdog: the open call if it started at `latest_start` or before, now taken (closed, and
  // the watchdog's to answer); nothing if none is open, it is not overdue, or the receiver claimed
  // it (or published the next) meanwhile.
  std::optional<Call> take_if_started_by(uint64_t latest_start) {
    uint64_t s = state_.load(std::memory_order_acquire);
    if ((s & kOpen) == 0) return std::nullopt;
    // Acquire: a field already rewritten for a later call means that call's claim came first,
    // and the compare-and-swap below then fails.
    Call c{nfd_.load(std::memory_order_acquire), id_.load(std::memory_order_acquire),
           start_ns_.load(std::memory_order_acquire), pid_.load(std::memory_order_acquire),
           nr_.load(std::memory_order_acquire)};
    if (c.start_ns > latest_start) return std::nullopt;
    if (!state_.compare_exchange_strong(s, (s & ~kOpen) | kTaken, std::memory_order_acq_rel))
      return std::nullopt;
    return c;
  }

  // A call was taken by the watchdog and its handler has not returned yet.
  bool stuck() const { return (state_.load(std::memory_order_acquire) & kTaken) != 0; }

 private:
  static constexpr uint64_t kOpen = 1, kTaken = 2, kBits = 3, kGeneration = 4;
  std::atomic<uint64_t> state_{0};
  std::atomic<int> nfd_{-1};
  std::atomic<uint64_t> id_{0};
  std::atomic<uint64_t> start_ns_{0};
  std::atomic<uint32_t> pid_{0};
  std::atomic<int> nr_{0};
};

}  // namespace gdrproxy::proxy
