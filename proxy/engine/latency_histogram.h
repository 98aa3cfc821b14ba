// Handler latencies of one session, for p50/p99 in `agent ctl stats` and `run --stats`. The idea
// not to miss: recording is on the hot path (every open, every timed ioctl), so it is a fixed array
// of log-spaced buckets (4 per octave, so a reported percentile is within 19 % of the true one), no
// allocation, no sorting; percentiles are read from the counts only when asked.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace gdrproxy::proxy {

class LatencyHistogram {
 public:
  void record(uint64_t ns) {
    ++counts_[bucket_of(ns)];
    ++total_;
  }
  uint64_t count() const { return total_; }
  // The upper bound of the bucket holding the q-quantile (0 < q <= 1), in nanoseconds; 0 when
  // nothing was recorded.
  uint64_t quantile_ns(double q) const {
    if (total_ == 0) return 0;
    const uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(total_ - 1)) + 1;
    uint64_t seen = 0;
    for (size_t b = 0; b < kBuckets; ++b) {
      seen += counts_[b];
      if (seen >= rank) return upper_bound_of(b);
    }
    return upper_bound_of(kBuckets - 1);
  }

 private:
  static constexpr unsigned kSub = 4;  // buckets per octave
  static constexpr size_t kBuckets = 64 * kSub;
  // Values below 2^kSub share the first buckets one per nanosecond-ish step.
  static size_t bucket_of(uint64_t ns) {
    if (ns < kSub) return ns;
    const unsigned octave = 63 - static_cast<unsigned>(std::countl_zero(ns));  // floor(log2)
    const unsigned sub = static_cast<unsigned>((ns >> (octave - 2)) & (kSub - 1));
    const size_t b = size_t{octave} * kSub + sub;
    return b < kBuckets ? b : kBuckets - 1;
  }
  static uint64_t upper_bound_of(size_t b) {
    const unsigned octave = static_cast<unsigned>(b / kSub);
    if (octave < 2) return b;  // the first buckets hold single values
    const uint64_t sub = b % kSub;
    return (uint64_t{1} << octave) + ((sub + 1) << (octave - 2)) - 1;
  }
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t total_ = 0;
};

}  // namespace gdrproxy::proxy
