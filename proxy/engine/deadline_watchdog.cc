#include "proxy/engine/deadline_watchdog.h"

#include <sys/syscall.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

#include "proxy/engine/clock.h"
#include "proxy/engine/seccomp_notify.h"

namespace gdrproxy::proxy {

void DeadlineWatchdog::start(boost::asio::io_context& loop) {
  if (deadline_ms_ == 0) return;
  timer_ = std::make_unique<boost::asio::steady_timer>(loop);
  arm();
}

void DeadlineWatchdog::cancel() {
  if (timer_) timer_->cancel();
}

void DeadlineWatchdog::arm() {
  // A quarter of the deadline: a stuck call is answered at most 25 % after it.
  const unsigned period = std::max(1u, deadline_ms_ / 4);
  timer_->expires_after(std::chrono::milliseconds(period));
  // Cancelling reaches a tick still waiting, not one already queued to run: that one finds this
  // watchdog destroyed (its session ended on the loop) and leaves it alone.
  timer_->async_wait(
      [this, alive = std::weak_ptr<const char>(alive_)](const boost::system::error_code& ec) {
        if (ec || alive.expired()) return;
        tick();
        if (!ended_) arm();
      });
}

void DeadlineWatchdog::tick() {
  if (deadline_ms_ == 0) return;
  const uint64_t deadline_ns = uint64_t(deadline_ms_) * 1000000ull;
  const uint64_t now = monotonic_ns();
  if (now < deadline_ns) return;
  const std::optional<InFlightCall::Call> overdue = inflight_.take_if_started_by(now - deadline_ns);
  if (!overdue) return;
  const int nr = overdue->nr;
  const uint32_t pid = overdue->pid;
  notif_error(overdue->nfd, overdue->id, EIO);
  ++failures_;
  const bool ioctl = nr == SYS_ioctl;
  const bool open = nr == SYS_open || nr == SYS_openat || nr == SYS_openat2 || nr == SYS_creat;
  if (!degraded_.exchange(true) || said_.first(0, "deadline", std::to_string(pid)))
    std::fprintf(stderr,
                 "%s%s by pid %u was not decided within %u ms (%s): failed closed (EIO); the "
                 "session is degraded, its next calls wait until that one returns; other "
                 "sessions are not affected\n",
                 log_prefix_.c_str(),
                 ioctl  ? "an ioctl"
                 : open ? "an open"
                        : "a call",
                 pid, deadline_ms_,
                 ioctl  ? "reading its argument is blocked: memory backed by a hung filesystem?"
                 : open ? "its path lookup or the host open is blocked: a hung filesystem?"
                        : "blocked on the tenant");
}

}  // namespace gdrproxy::proxy
