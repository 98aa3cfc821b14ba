// Bundle reads on their own threads (see bundle_reads.h). Each read is settled once, by whichever
// comes first on the loop: its answer or its deadline; the other finds it settled and does
// nothing but keep the count of stuck reads right.
#include "proxy/agent/bundle_reads.h"

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <mutex>
#include <thread>
#include <utility>

#include "proxy/agent/bundle_check.h"

namespace gdrproxy::proxy {

namespace asio = boost::asio;

// What the reading threads share with the loop: the loop to post to while the agent lives.
struct BundleReads::Shared {
  std::mutex mu;
  asio::io_context* io = nullptr;
  size_t stuck = 0;
};

namespace {

// One read: settled once (on the loop); `done` dropped when it is, so that a stuck thread keeps
// nothing of the handover alive.
struct Read {
  bool settled = false;
  BundleReads::Done done;
  void settle(BundleReads::Result r) {
    if (settled) return;
    settled = true;
    BundleReads::Done d = std::move(done);
    done = nullptr;
    d(std::move(r));
  }
};

}  // namespace

BundleReads::BundleReads(asio::io_context& io, std::chrono::milliseconds deadline, size_t max_stuck)
    : io_(io), deadline_(deadline), max_stuck_(max_stuck), shared_(std::make_shared<Shared>()) {
  shared_->io = &io;
}

BundleReads::~BundleReads() {
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->io = nullptr;
}

size_t BundleReads::stuck() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->stuck;
}

void BundleReads::check(const std::string& bundle, const std::string& socket,
                        const std::string& metadata, Done done) {
  if (const size_t n = stuck(); n >= max_stuck_) {
    done(Result{false,
                "refused at once: " + std::to_string(n) +
                    " earlier bundle reads have not returned (their filesystems do not answer)",
                {}});
    return;
  }
  auto read = std::make_shared<Read>();
  read->done = std::move(done);
  auto timer = std::make_shared<asio::steady_timer>(io_, deadline_);
  const auto ms = deadline_.count();
  timer->async_wait(
      [timer, read, shared = shared_, ms, bundle](const boost::system::error_code& e) {
        if (e || read->settled) return;
        {
          std::lock_guard<std::mutex> lock(shared->mu);
          ++shared->stuck;
        }
        read->settle(Result{false,
                            "its bundle's config.json (" + bundle + ") was not read within " +
                                std::to_string(ms) + " ms (its filesystem does not answer)",
                            {}});
      });
  std::thread([read, shared = shared_, bundle, socket, metadata] {
    Result r;
    r.ok = bundle_hands_listener_to(bundle, socket, metadata, r.why, &r.untrapped, &r.pod);
    std::lock_guard<std::mutex> lock(shared->mu);
    if (!shared->io) return;  // the agent is gone
    asio::post(*shared->io, [read, shared, r = std::move(r)]() mutable {
      if (read->settled) {  // its deadline came first: it is no longer stuck
        std::lock_guard<std::mutex> l(shared->mu);
        --shared->stuck;
        return;
      }
      read->settle(std::move(r));
    });
  }).detach();
}

}  // namespace gdrproxy::proxy
