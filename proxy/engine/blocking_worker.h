// Work that can block on a tenant, run off the engine's loop: resolving a path on the tenant's
// filesystems (a FUSE mount can leave a lookup unanswered forever), reading its memory, the host
// open of a GPU node (the first open of a GPU can take seconds). One thread per session. The idea
// not to miss: a job stuck in the kernel costs its own session, never the loop; the session
// answers the stuck call at its deadline (fail closed) and, when it ends, leaves the stuck thread
// behind (detached) instead of waiting for it. Jobs therefore own (shared_ptr) everything they
// touch.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace gdrproxy::proxy {

class BlockingWorker {
 public:
  // At most this many jobs wait behind the running one; more are refused.
  static constexpr size_t kMaxQueued = 1024;

  BlockingWorker();
  ~BlockingWorker();
  BlockingWorker(const BlockingWorker&) = delete;
  BlockingWorker& operator=(const BlockingWorker&) = delete;

  // Queues `job` (run on the worker thread, in order; an exception from it is swallowed). False
  // when the queue is full: the caller fails its call closed.
  bool submit(std::function<void()> job);

 private:
  struct Queue {
    std::mutex m;
    std::condition_variable cv;
    std::deque<std::function<void()>> jobs;
    bool stop = false;
  };
  std::shared_ptr<Queue> queue_;
  std::thread thread_;
};

}  // namespace gdrproxy::proxy
