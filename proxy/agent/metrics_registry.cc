#include "proxy/agent/metrics_registry.h"

namespace gdrproxy::proxy {

ContainerCalls container_calls(const std::string& id, const CallCounters& c) {
  ContainerCalls out{id};
  for (const ClassCounts& k : c) {
    out.calls += k.calls;
    for (const uint64_t d : k.denied) out.denied += d;
  }
  return out;
}

std::shared_ptr<CallMetrics> MetricsRegistry::container_started(const std::string& id) {
  if (const auto it = live_.find(id); it != live_.end()) return it->second.block;
  // An id spelt like the fold's own label is folded: one series may not stand for two.
  Entry e{std::make_shared<CallMetrics>(), own_ < cap_ && id != "_other"};
  if (e.own)
    ++own_;
  else
    ++folded_;
  live_.emplace(id, e);
  return e.block;
}

void MetricsRegistry::container_ended(const std::string& id, uint64_t trace_bytes) {
  const auto it = live_.find(id);
  if (it == live_.end()) return;
  const CallCounters c = it->second.block->read();
  for (size_t k = 0; k < kCallClasses; ++k) ended_[k].add(c[k]);
  if (it->second.own) {
    --own_;
  } else {
    const ContainerCalls mine = container_calls(id, c);
    ended_other_.calls += mine.calls;
    ended_other_.denied += mine.denied;
  }
  ended_trace_bytes_ += trace_bytes;
  live_.erase(it);
}

MetricsSnapshot MetricsRegistry::snapshot() const {
  MetricsSnapshot s;
  s.classes = ended_;
  s.other = ended_other_;
  for (const auto& [id, e] : live_) {
    const CallCounters c = e.block->read();
    for (size_t k = 0; k < kCallClasses; ++k) s.classes[k].add(c[k]);
    const ContainerCalls mine = container_calls(id, c);
    if (e.own) {
      s.containers.push_back(mine);
    } else {
      s.other.calls += mine.calls;
      s.other.denied += mine.denied;
    }
  }
  s.containers_folded = folded_;
  s.adoptions = adoptions_;
  s.listeners_lost = listeners_lost_;
  s.trace_bytes = ended_trace_bytes_;
  return s;
}

}  // namespace gdrproxy::proxy
