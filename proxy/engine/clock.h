// The clocks a call's handling reads. The idea not to miss: the coarse clock costs a few ns where
// the precise one costs 20-50 (a clock-source read), so a call's start is read coarsely unless a
// latency is measured from it (a traced call, an open, a timed ioctl).
#pragma once

#include <time.h>

#include <cstdint>

namespace gdrproxy::proxy {

inline uint64_t monotonic_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_nsec);
}

// CLOCK_MONOTONIC as of the last tick: never ahead of monotonic_ns(), behind it by less than a
// tick, and read without the clock source.
inline uint64_t coarse_monotonic_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_nsec);
}

// Seconds since the epoch, for a trace record's time.
inline double wall_seconds() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return double(t.tv_sec) + double(t.tv_nsec) / 1e9;
}

}  // namespace gdrproxy::proxy
