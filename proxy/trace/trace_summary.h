// `gdrproxy trace summarize`: a table per call (count, errors, p50/p99 latency) from a
// --trace-json file. Lines that are not valid records are counted and reported, not fatal.
#pragma once

#include <istream>
#include <ostream>

namespace gdrproxy::proxy {

struct SummaryStats {
  size_t records = 0;
  size_t bad_lines = 0;
};

SummaryStats summarize_trace(std::istream& in, std::ostream& out);

}  // namespace gdrproxy::proxy
