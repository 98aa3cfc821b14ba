// The JSON trace file's writer (--trace-json). The idea not to miss: records are formatted and
// written by a thread of the writer's own, fed through a bounded queue, so a trace file that
// stops taking bytes (a pipe whose reader stalls, a full or hung filesystem) never stalls the
// session's thread, and through it no sandboxed caller. What cannot be queued (the queue is full)
// or written before the end (the file still does not take it) is counted and said, never waited
// for without bound.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "base/unique_fd.h"
#include "proxy/trace/trace_record.h"

namespace gdrproxy::proxy {

class JsonTraceWriter {
 public:
  static constexpr size_t kQueueLimit = 1 << 16;  // records waiting to be written
  // While records keep coming, the writer takes them every kGather or every kBatch records,
  // whichever is first; a record pushed to an idle writer wakes it at once.
  static constexpr std::chrono::milliseconds kGather{5};
  static constexpr size_t kBatch = 256;

  // Takes the open file. Written with write(2), never stdio: a thread stuck in a FILE would hold
  // its lock, and the process's exit, which flushes every FILE, would wait for it.
  explicit JsonTraceWriter(UniqueFd file);
  ~JsonTraceWriter();
  JsonTraceWriter(const JsonTraceWriter&) = delete;
  JsonTraceWriter& operator=(const JsonTraceWriter&) = delete;

  // Queues `r`; never blocks on the file. A full queue drops it (counted).
  void push(TraceRecord&& r);
  // Asks for the file to be flushed once what is queued now is written; returns at once.
  void flush();
  // Writes what is queued and flushes, waiting at most `grace`; then the writer stops (a thread
  // still stuck in the file is left to the process's exit). Idempotent.
  void finish(std::chrono::milliseconds grace);
  // Records dropped: a full queue, or still queued when finish() gave up.
  uint64_t dropped() const;
  // Bytes written to the file so far (from any thread).
  uint64_t written_bytes() const;

  struct State;  // shared with the writer's thread (json_trace_writer.cc)

 private:
  std::shared_ptr<State> state_;
};

}  // namespace gdrproxy::proxy
