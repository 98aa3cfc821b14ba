// See blocking_worker.h. The thread owns a reference to its queue, so it can outlive the worker.
#include "proxy/engine/blocking_worker.h"

namespace gdrproxy::proxy {

BlockingWorker::BlockingWorker() : queue_(std::make_shared<Queue>()) {
  thread_ = std::thread([q = queue_] {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(q->m);
        q->cv.wait(lock, [&] { return q->stop || !q->jobs.empty(); });
        if (q->stop) return;
        job = std::move(q->jobs.front());
        q->jobs.pop_front();
      }
      try {
        job();
      } catch (...) {
        // A job reports through what it captured; nothing may end this thread early.
      }
    }
  });
}

BlockingWorker::~BlockingWorker() {
  {
    std::lock_guard lock(queue_->m);
    queue_->stop = true;
    queue_->jobs.clear();
  }
  queue_->cv.notify_all();
  // A job may be stuck in the kernel (an unanswered FUSE lookup): never wait for it.
  thread_.detach();
}

bool BlockingWorker::submit(std::function<void()> job) {
  {
    std::lock_guard lock(queue_->m);
    if (queue_->jobs.size() >= kMaxQueued) return false;
    queue_->jobs.push_back(std::move(job));
  }
  queue_->cv.notify_one();
  return true;
}

}  // namespace gdrproxy::proxy
