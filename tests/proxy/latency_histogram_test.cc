// The session's latency histogram: percentiles within one bucket (+0/-19 %) of the exact ones,
// whatever the distribution, and nothing recorded reads as 0.
#include "proxy/engine/latency_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace gdrproxy::proxy {
namespace {

TEST(LatencyHistogram, PercentilesAreWithinOneBucketOfTheExactOnes) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(10.0, 1.5);  // ~22 us median, a long tail
  LatencyHistogram h;
  std::vector<uint64_t> all;
  for (int i = 0; i < 100000; ++i) {
    const uint64_t ns = static_cast<uint64_t>(dist(rng)) + 1;
    h.record(ns);
    all.push_back(ns);
  }
  std::sort(all.begin(), all.end());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const double exact = static_cast<double>(all[static_cast<size_t>(q * (all.size() - 1))]);
    const double got = static_cast<double>(h.quantile_ns(q));
    EXPECT_GE(got, exact) << q;
    EXPECT_LE(got, exact * 1.26) << q;
  }
  EXPECT_EQ(h.count(), all.size());
}

TEST(LatencyHistogram, SmallAndHugeValuesAndEmpty) {
  LatencyHistogram h;
  EXPECT_EQ(h.quantile_ns(0.5), 0u);
  h.record(0);
  h.record(3);
  EXPECT_EQ(h.quantile_ns(0.5), 0u);
  EXPECT_EQ(h.quantile_ns(1.0), 3u);
  h.record(UINT64_MAX);
  EXPECT_GE(h.quantile_ns(1.0), uint64_t{1} << 63);
}

}  // namespace
}  // namespace gdrproxy::proxy
