// Where the agent's metrics are kept between scrapes: each served container's call counters (one
// lock-free block per session, proxy/engine/call_metrics.h), what ended containers added, and the
// agent's own counts (adoptions, listeners lost). The idea not to miss: the per-container series
// are bounded by a cap decided when a container starts, never at a scrape: a container that
// starts while `cap` others have a series of their own is counted under container="_other" for
// its whole life, so every series stays a counter (it never goes down) however containers come
// and go. The registry is the agent loop's: every member is touched on the loop only.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "proxy/agent/metrics_text.h"
#include "proxy/engine/call_metrics.h"

namespace gdrproxy::proxy {

class MetricsRegistry {
 public:
  static constexpr size_t kContainerCap = 256;
  explicit MetricsRegistry(size_t cap = kContainerCap) : cap_(cap) {}

  // A container about to be served: the block its session counts into.
  std::shared_ptr<CallMetrics> container_started(const std::string& id);
  // It ended (or never served): its counts stay in the totals (and in "_other"'s, if folded); its
  // own series ends. Unknown ids are ignored.
  void container_ended(const std::string& id, uint64_t trace_bytes);

  void adoption(AdoptionOutcome o) { ++adoptions_[static_cast<size_t>(o)]; }
  void listener_lost() { ++listeners_lost_; }

  // Everything the registry knows; the agent adds what its live containers are now (modes,
  // degraded, their trace bytes so far) and the judge's state.
  MetricsSnapshot snapshot() const;

 private:
  struct Entry {
    std::shared_ptr<CallMetrics> block;
    bool own = false;  // a series of its own; else folded into "_other"
  };
  const size_t cap_;
  std::map<std::string, Entry> live_;
  size_t own_ = 0;  // live containers with a series of their own
  CallCounters ended_{};
  ContainerCalls ended_other_{"_other"};
  uint64_t folded_ = 0, ended_trace_bytes_ = 0, listeners_lost_ = 0;
  std::array<uint64_t, kAdoptionOutcomes> adoptions_{};
};

// A container's calls and refusals, all classes together.
ContainerCalls container_calls(const std::string& id, const CallCounters& c);

}  // namespace gdrproxy::proxy
