#include "proxy/trace/trace_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gdrproxy::proxy {
namespace {

struct Row {
  size_t count = 0, errors = 0, denied = 0;
  std::vector<double> latencies;
};

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t idx = static_cast<size_t>(std::ceil(p * v.size())) - 1;
  return v[std::min(idx, v.size() - 1)];
}

}  // namespace

SummaryStats summarize_trace(std::istream& in, std::ostream& out) {
  SummaryStats st;
  std::map<std::pair<std::string, std::string>, Row> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("call")) {
      ++st.bad_lines;
      continue;
    }
    ++st.records;
    Row& r = rows[{j.value("device_class", "?"), j.value("call", "?")}];
    ++r.count;
    if (j.contains("errno") && !j["errno"].is_null()) ++r.errors;
    if (j.value("decision", "") == "deny") ++r.denied;
    if (j.contains("latency_us") && j["latency_us"].is_number())
      r.latencies.push_back(j["latency_us"].get<double>());
  }
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-12s %-44s %7s %6s %6s %10s %10s\n", "class", "call", "count",
                "errors", "denied", "p50_us", "p99_us");
  out << buf;
  for (auto& [key, r] : rows) {
    std::snprintf(buf, sizeof buf, "%-12s %-44s %7zu %6zu %6zu %10.1f %10.1f\n", key.first.c_str(),
                  key.second.c_str(), r.count, r.errors, r.denied, percentile(r.latencies, 0.5),
                  percentile(r.latencies, 0.99));
    out << buf;
  }
  out << st.records << " records";
  if (st.bad_lines) out << ", " << st.bad_lines << " unreadable lines skipped";
  out << "\n";
  return st;
}

}  // namespace gdrproxy::proxy
