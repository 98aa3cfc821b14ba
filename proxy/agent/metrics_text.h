// The agent's metrics in the Prometheus text exposition format (version 0.0.4): a plain
// snapshot in, the page out. The idea not to miss: this is pure rendering, so everything a scrape
// shows can be unit-tested; every label value a tenant can influence (a container id) is escaped
// here (backslash, double quote, newline), and the series a page may hold are bounded: per-class
// and per-reason series come from fixed enums, per-container ones from at most the registry's cap
// plus one "_other" series.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/engine/call_metrics.h"

namespace gdrproxy::proxy {

// How a handover ended (metrics_registry.h counts them).
enum class AdoptionOutcome : uint8_t {
  kNewContainer,  // made its container's session
  kJoined,        // joined a container served already
  kReattached,    // re-attached from the fd store after a restart
  kRefused,       // refused (its listener closed: its trapped calls fail with ENOSYS)
  kCount,
};
inline constexpr size_t kAdoptionOutcomes = static_cast<size_t>(AdoptionOutcome::kCount);
const char* adoption_outcome_name(AdoptionOutcome o);  // "new_container", "joined", ...

// One container's own series, or "_other" (every container past the cap, together).
struct ContainerCalls {
  std::string id;
  uint64_t calls = 0, denied = 0;
};

// What one scrape shows.
struct MetricsSnapshot {
  uint64_t containers_enforce = 0, containers_trace = 0;  // served now, by mode
  uint64_t containers_degraded = 0;                       // served now, degraded
  CallCounters classes{};                                 // every container's, ended ones too
  std::vector<ContainerCalls> containers;                 // those with a series of their own
  ContainerCalls other{"_other"};                         // the folded ones'
  uint64_t containers_folded = 0;                         // containers ever folded
  std::array<uint64_t, kAdoptionOutcomes> adoptions{};
  uint64_t listeners_lost = 0;
  double start_time_seconds = 0;    // since the epoch
  uint64_t restarts = 0;            // agents started before this one (agent_start_count.h)
  const char* judge_state = "off";  // "off", "unpinned", "pinned"
  uint64_t trace_bytes = 0;
};

// A label value as the exposition format wants it (without its quotes).
std::string escape_label_value(std::string_view v);

// The page, each metric with its # HELP and # TYPE.
std::string render_metrics(const MetricsSnapshot& s);

}  // namespace gdrproxy::proxy
