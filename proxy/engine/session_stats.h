// A session's counters, for --stats, `agent ctl stats` and `gdrproxy run`'s closing lines. The
// idea not to miss: an ioctl's handling time is sampled (one call in kPhaseSampleEvery), in total
// and phase by phase, because a clock read costs as much as a phase on the enforce fast path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "proxy/sandbox/ioctl_lsm.h"
#include "proxy/sandbox/kernel_allow.h"

namespace gdrproxy::proxy {

// One trapped ioctl in this many is timed, in total and phase by phase.
inline constexpr uint64_t kPhaseSampleEvery = 32;

// Where an ioctl's handling time goes: finding the device behind the fd and checking the grant,
// reading the caller's memory, decoding (the rest of the reading), the policy (and a GPU's grant
// by device instance), answering the kernel, and the trace (records, observer). Summed over the
// calls timed phase by phase.
struct IoctlPhases {
  uint64_t lookup = 0, memory = 0, decode = 0, policy = 0, answer = 0, trace = 0;
};

// Charges to `p.trace` what a timed call's `total_ns` spent beyond the phases it added to `p`
// since `before`: the trace's share (records, sinks, observer).
inline void charge_trace(IoctlPhases& p, const IoctlPhases& before, uint64_t total_ns) {
  const uint64_t accounted = (p.lookup - before.lookup) + (p.memory - before.memory) +
                             (p.decode - before.decode) + (p.policy - before.policy) +
                             (p.answer - before.answer);
  p.trace += total_ns > accounted ? total_ns - accounted : 0;
}

// What the call handler counts (call_handler.h).
struct CallCounts {
  uint64_t allowed_unread = 0;  // trapped ioctls allowed without reading their parameters
  // Trapped ioctls judged from their trap copy (no fd lookup, argument bytes not read again),
  // and those that had none (the supervisor looked them up itself); both 0 without copies.
  uint64_t trap_copies_used = 0, trap_copies_missed = 0;
  // Of the missed: copies rewritten while their bytes were read (dropped, the call looked up).
  uint64_t trap_copies_torn = 0;
};

// Counters of one session.
struct SessionStats {
  using IoctlPhases = proxy::IoctlPhases;
  uint64_t ioctls = 0, opens = 0, brokered = 0, denied = 0, repeated_denials = 0;
  // Time spent handling: every open, and the ioctls timed (ioctl_phase_samples of them).
  uint64_t ns_ioctl = 0, ns_open = 0;
  IoctlPhases ioctl_ns;
  uint64_t ioctl_phase_samples = 0;
  uint64_t handler_faults = 0;  // notifications failed closed by the exception boundary
  // Ioctls of its tasks another's BPF LSM judge refused (the agent's: reported to the session).
  uint64_t kernel_refused = 0;
  uint64_t allowed_unread = 0;  // trapped ioctls allowed without reading their parameters
  // Trapped ioctls judged from their trap copy, those that had none, and of the missed those
  // rewritten while read (CallCounts).
  uint64_t trap_copies_used = 0, trap_copies_missed = 0;
  uint64_t trap_copies_torn = 0;
  uint64_t observer_lost = 0;       // results lost to a full observer ring buffer
  uint64_t observer_skipped = 0;    // observer program runs the kernel skipped (all sessions')
  uint64_t results_unobserved = 0;  // traced calls whose result never came (their records say)
  uint64_t fds_watched = 0;         // fds whose writes the observer watches now
  uint64_t fds_unwatched_gone = 0;  // watches removed because their process had exited
  // Handler latency of every open and every timed ioctl (+0/-19 %).
  uint64_t p50_ns = 0, p99_ns = 0;
  uint64_t deadline_failures = 0;  // calls failed closed (EIO) at or past their deadline
  bool degraded = false;           // some call was not answered in time
  // The session's thread is in a call past its deadline now: only the fields above this
  // struct's atomics (deadline_failures, degraded) are current, the rest read 0.
  bool stuck = false;
};

// What `gdrproxy run`'s closing lines say besides the counters.
struct SummaryFacts {
  const std::string& log_prefix;
  bool quiet = false, tracing = false;
  bool observed = false;                // an observer completed traced calls
  uint64_t trace_records_dropped = 0;   // records the JSON file did not take in time
  std::string trace_json;               // its path
  std::optional<IoctlLsm::Counts> lsm;  // the BPF LSM judge's, when loaded
  const KernelAllowed& kernel_allowed;  // the requests let run untrapped
};

// The closing lines: lost results, failed-closed calls, counts (all of them `with_stats`).
void print_summary(const SessionStats& s, const SummaryFacts& f, bool with_stats);

}  // namespace gdrproxy::proxy
