// The records of traced calls waiting for their result, one entry each, shared by a session's
// receivers (which add them as they answer) and its loop (which completes them as results come,
// or gives them up). The idea not to miss: an entry is filled by the thread that took it before
// it is published, and completed only by the thread that claims it, so the record itself is
// never touched by two threads at once; the lock below guards the entries' bookkeeping (which
// are free, waiting or claimed, and the deque's growth) for a few instructions at a time, so a
// receiver never waits while a batch of results is decoded and written.
// An entry's index is the low half of the cookie its registration carries: a result finds its
// record with no lookup, and a stale result (its entry since given up and reused) is told by its
// sequence number. Entries are reused and never move (a deque), so a traced call allocates none
// once as many calls as ever waited at once have been seen.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "proxy/trace/trace_record.h"

namespace gdrproxy::proxy {

class PendingResults {
 public:
  struct Call {
    TraceRecord record;
    uint64_t t0 = 0;   // when its notification was received
    uint32_t tid = 0;  // the caller (host tid)
  };
  // What a sweep needs of a waiting entry.
  struct Waiting {
    uint32_t index;
    uint32_t tid;
    uint64_t seq;
  };

  // A free entry, the caller's to fill (at()) and then publish() or release().
  uint32_t take();
  // The entry's call: for the thread that took it (until published) or claimed it.
  Call& at(uint32_t index);
  // Taken -> waiting: from now on its result may claim it.
  void publish(uint32_t index);
  // The waiting entry `index` if it waits for call `seq`, now the caller's (claimed): nullptr if
  // it does not (completed or given up already, or reused by a later call).
  Call* claim(uint32_t index, uint64_t seq);
  // Taken or claimed -> free.
  void release(uint32_t index);
  // The entries waiting now.
  std::vector<Waiting> waiting() const;

 private:
  enum class State : uint8_t { kFree, kTaken, kWaiting, kClaimed };
  mutable std::mutex mu_;
  std::deque<Call> calls_;
  std::vector<State> states_;
  std::vector<uint32_t> free_;
};

}  // namespace gdrproxy::proxy
