// The JSON trace writer's thread and queue (see json_trace_writer.h). The state is shared with
// the thread, so a thread left stuck in the file by finish() never touches freed memory.
#include "proxy/trace/json_trace_writer.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace gdrproxy::proxy {

struct JsonTraceWriter::State {
  std::mutex mu;
  std::condition_variable wake, idle;
  // Swapped with the writer's emptied batch each time it takes the queue, so both keep their
  // capacity: a push allocates nothing once the two have grown to a gather's records.
  std::vector<TraceRecord> queue;
  bool flush_asked = false, stopping = false, done = false;
  // The writer waits without a deadline (nothing queued): a push must wake it. Otherwise it
  // wakes on its own within kGather, and a push wakes it only for a full batch.
  bool asleep = false;
  uint64_t dropped = 0;
  std::atomic<uint64_t> written{0};  // bytes the file took (the writer's thread adds)
  UniqueFd file;
};

namespace {

// Writes all of `buf`, counting into `written` what the file took; false when the file refuses
// it (an error other than an interruption).
bool write_all(int fd, const std::string& buf, std::atomic<uint64_t>& written) {
  size_t done = 0;
  while (done < buf.size()) {
    const ssize_t n = ::write(fd, buf.data() + done, buf.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
    written.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  }
  return true;
}

void write_loop(const std::shared_ptr<JsonTraceWriter::State>& s) {
  constexpr size_t kWriteAt = 64 * 1024;  // bytes gathered before a write(2)
  // A burst's capacity is not kept past this many records (the queue may hold kQueueLimit).
  constexpr size_t kKeep = 4 * JsonTraceWriter::kBatch;
  std::string buf;
  std::vector<TraceRecord> batch;
  uint64_t in_buf = 0;  // records in buf
  std::unique_lock<std::mutex> lock(s->mu);
  for (;;) {
    const auto asked = [&] { return s->flush_asked || s->stopping; };
    // Records that keep coming are gathered for kGather (or a full batch) and formatted
    // together: a busy session's pushes then never pay a wake-up (a futex call each) and this
    // thread does not take a CPU from the callers on every record.
    s->wake.wait_for(lock, JsonTraceWriter::kGather,
                     [&] { return s->queue.size() >= JsonTraceWriter::kBatch || asked(); });
    if (s->queue.empty() && !asked()) {
      s->asleep = true;
      s->wake.wait(lock, [&] { return !s->queue.empty() || asked(); });
      s->asleep = false;
      continue;
    }
    batch.swap(s->queue);
    const bool flush = s->flush_asked || s->stopping;
    s->flush_asked = false;
    const bool stop = s->stopping;
    lock.unlock();
    uint64_t lost = 0;
    for (const TraceRecord& r : batch) {
      buf += format_json(r);
      buf += '\n';
      ++in_buf;
      if (buf.size() >= kWriteAt) {
        if (!write_all(s->file.get(), buf, s->written)) lost += in_buf;
        buf.clear();
        in_buf = 0;
      }
    }
    if (flush && !buf.empty()) {
      if (!write_all(s->file.get(), buf, s->written)) lost += in_buf;
      buf.clear();
      in_buf = 0;
    }
    batch.clear();  // the records' strings are freed here, off the lock
    if (batch.capacity() > kKeep) {
      batch.shrink_to_fit();
      batch.reserve(kKeep);
    }
    lock.lock();
    s->dropped += lost;
    if (stop && s->queue.empty()) {
      s->file.reset();
      s->done = true;
      s->idle.notify_all();
      return;
    }
    s->idle.notify_all();
  }
}

}  // namespace

JsonTraceWriter::JsonTraceWriter(UniqueFd file) : state_(std::make_shared<State>()) {
  state_->file = std::move(file);
  std::thread([s = state_] {
    pthread_setname_np(pthread_self(), "gdrproxy-json");  // for ps, top, perf and gdb
    write_loop(s);
  }).detach();
}

JsonTraceWriter::~JsonTraceWriter() {
  finish(std::chrono::seconds(5));
}

void JsonTraceWriter::push(TraceRecord&& r) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->stopping || state_->queue.size() >= kQueueLimit) {
    ++state_->dropped;
    return;
  }
  state_->queue.push_back(std::move(r));
  if (state_->asleep || state_->queue.size() == kBatch) state_->wake.notify_one();
}

void JsonTraceWriter::flush() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->flush_asked = true;
  state_->wake.notify_one();
}

void JsonTraceWriter::finish(std::chrono::milliseconds grace) {
  std::unique_lock<std::mutex> lock(state_->mu);
  if (state_->done) return;
  if (!state_->stopping) {
    state_->stopping = true;
    state_->wake.notify_one();
  }
  if (!state_->idle.wait_for(lock, grace, [&] { return state_->done; })) {
    // The file does not take the bytes: what is still queued is lost, and said so.
    state_->dropped += state_->queue.size();
    state_->queue.clear();
  }
}

uint64_t JsonTraceWriter::written_bytes() const {
  return state_->written.load(std::memory_order_relaxed);
}

uint64_t JsonTraceWriter::dropped() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->dropped;
}

}  // namespace gdrproxy::proxy
