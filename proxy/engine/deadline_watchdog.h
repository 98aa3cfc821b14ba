// The deadline watchdog of a session (the agent's --blocking-deadline-ms): on the engine's loop,
// it answers EIO to a call its receiver has not answered within the deadline, and marks the
// session degraded. The idea not to miss: the receiver may be blocked in the kernel for ever (a
// read of the tenant's memory faulting into a hung FUSE server), so the loop answers for it, and
// exactly one of the two answers each call (InFlightCall's one atomic word); the sandbox's
// further calls are never received here (a notification RECV cannot be made non-blocking, and the
// loop could be left blocked in it): they wait for the receiver, that sandbox's own stall. The
// loop outlives the watchdog: a tick already queued when it is cancelled and destroyed (its
// session ended on the loop) finds it gone (alive_) and does nothing.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "proxy/engine/denial_log.h"
#include "proxy/engine/in_flight.h"

namespace gdrproxy::proxy {

class DeadlineWatchdog {
 public:
  // `deadline_ms` 0: no deadline (start() and tick() do nothing). `ended` stops its timer.
  DeadlineWatchdog(InFlightCall& inflight, unsigned deadline_ms, std::string log_prefix,
                   const std::atomic<bool>& ended)
      : inflight_(inflight),
        deadline_ms_(deadline_ms),
        log_prefix_(std::move(log_prefix)),
        ended_(ended) {}

  // Ticks on `loop` every quarter of the deadline until the session ends or cancel().
  void start(boost::asio::io_context& loop);
  void cancel();
  // Answers the call in flight, EIO, if it started more than the deadline ago, and says so.
  void tick();

  uint64_t failures() const { return failures_; }
  bool degraded() const { return degraded_; }

 private:
  void arm();

  InFlightCall& inflight_;
  const unsigned deadline_ms_;
  const std::string log_prefix_;
  const std::atomic<bool>& ended_;
  std::unique_ptr<boost::asio::steady_timer> timer_;  // on the engine's loop
  const std::shared_ptr<const char> alive_ =
      std::make_shared<const char>();  // ticks hold a weak_ptr
  std::atomic<uint64_t> failures_{0};
  std::atomic<bool> degraded_{false};
  DenialLog said_;  // one deadline line per process
};

}  // namespace gdrproxy::proxy
