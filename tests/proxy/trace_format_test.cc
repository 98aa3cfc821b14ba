// Trace rendering: text lines carry who/device/call/result/latency; JSON lines carry the same
// fields; the summary counts calls, errors and denials and computes percentiles.
#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "proxy/trace/trace_record.h"
#include "proxy/trace/trace_summary.h"

namespace gdrproxy::proxy {
namespace {

TraceRecord sample() {
  TraceRecord r;
  r.seq = 7;
  r.who = {1234, 1234, 5, 5, 4026532000, "ibv_rc_pingpong"};
  r.syscall = "ioctl";
  r.fd = 3;
  r.device = "uverbs0";
  r.call.device_class = DeviceClass::kUverbs;
  r.call.name = "INVOKE_WRITE(ALLOC_PD)";
  r.decision = "allow";
  r.ret = 0;
  r.out = {{"pd_handle", "1"}};
  r.latency_us = 12.5;
  return r;
}

TEST(TraceFormat, TextLineReadsLikeStrace) {
  const std::string s = format_text(sample());
  EXPECT_NE(s.find("[pid 1234 ns 5 pidns 4026532000 ibv_rc_pingpong]"), std::string::npos) << s;
  EXPECT_NE(s.find("uverbs0 ioctl INVOKE_WRITE(ALLOC_PD)() = 0 {pd_handle=1} <12.5us>"),
            std::string::npos)
      << s;
}

TEST(TraceFormat, DenialShowsErrnoAndRule) {
  TraceRecord r = sample();
  r.decision = "deny";
  r.ret = -1;
  r.err = EACCES;
  r.reason = "uverbs rule #0";
  const std::string s = format_text(r);
  EXPECT_NE(s.find("= -1 EACCES (Permission denied)"), std::string::npos) << s;
  EXPECT_NE(s.find("[denied: uverbs rule #0]"), std::string::npos) << s;
}

// Every result has a name: errnos outside any short list (the soft-RoCE suite's
// DEVICE.QUERY_GID_ENTRY returned ENODATA) and the kernel's restart codes, explained.
TEST(TraceFormat, EveryErrnoIsNamedAndRestartCodesExplained) {
  TraceRecord r = sample();
  r.ret = -1;
  r.err = ENODATA;
  EXPECT_NE(format_text(r).find("= -1 ENODATA (No data available)"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(format_json(r))["errno"], "ENODATA");
  r.ret = -512;
  r.err = 512;
  const std::string s = format_text(r);
  EXPECT_NE(s.find("= -512 ERESTARTSYS (interrupted by a signal; restarted or turned into EINTR)"),
            std::string::npos)
      << s;
  EXPECT_EQ(nlohmann::json::parse(format_json(r))["errno"], "ERESTARTSYS");
  for (int e = 1; e <= 4095; ++e) {
    r.err = e;
    const std::string line = format_text(r);
    EXPECT_EQ(line.find("E?"), std::string::npos) << line;
    EXPECT_EQ(nlohmann::json::parse(format_json(r))["errno"].get<std::string>().rfind("E", 0), 0u);
  }
  r.err = 600;
  EXPECT_NE(format_text(r).find("E600 (no errno has this number)"), std::string::npos);
}

TEST(TraceFormat, JsonCarriesTheSameFields) {
  auto j = nlohmann::json::parse(format_json(sample()));
  EXPECT_EQ(j["pid"], 1234);
  EXPECT_EQ(j["nspid"], 5);
  EXPECT_EQ(j["pidns"], 4026532000u);
  EXPECT_EQ(j["device"], "uverbs0");
  EXPECT_EQ(j["call"], "INVOKE_WRITE(ALLOC_PD)");
  EXPECT_EQ(j["result"], 0);
  EXPECT_TRUE(j["errno"].is_null());
  EXPECT_EQ(j["out"]["pd_handle"], "1");
  EXPECT_DOUBLE_EQ(j["latency_us"].get<double>(), 12.5);
}

// The JSON line is exactly what a JSON library writes back after reading it: keys sorted,
// repeated argument names collapsed to their last value, strings escaped, numbers exact.
TEST(TraceFormat, JsonIsWhatAJsonLibraryWritesBack) {
  TraceRecord r = sample();
  r.wall_time = 1795660543.1397169;
  r.who.comm = "a\"b\\c\n\x01\x7f\u00e9";  // quote, backslash, controls, DEL, UTF-8
  r.call.args = {{"z", "1"}, {"a", "2"}, {"z", "3"}};
  r.call.malformed = "short";
  r.reason = "uverbs rule #0";
  r.note = "result not observed";
  r.err = EPERM;
  r.ret = -1;
  r.latency_us = 3.0;
  const std::string line = format_json(r);
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j.dump(), line);
  EXPECT_EQ(j["args"]["z"], "3");
  EXPECT_EQ(j["comm"], r.who.comm);
  EXPECT_EQ(j["time"].get<double>(), r.wall_time);
  EXPECT_EQ(j["errno"], "EPERM");
}

// Bytes that are not UTF-8 (a tenant's comm, a path) become U+FFFD: the line stays valid JSON.
TEST(TraceFormat, JsonReplacesBytesThatAreNotUtf8) {
  TraceRecord r = sample();
  r.who.comm =
      std::string("x\xff\xc0\xafy\xed\xa0\x80z\xe2\x82");  // stray, overlong, surrogate, cut
  r.wall_time = std::nan("");
  const std::string line = format_json(r);
  ASSERT_TRUE(nlohmann::json::accept(line)) << line;
  const auto j = nlohmann::json::parse(line);
  const std::string comm = j["comm"];
  EXPECT_EQ(comm.front(), 'x');
  EXPECT_NE(comm.find('y'), std::string::npos);
  EXPECT_NE(comm.find("\xEF\xBF\xBD"), std::string::npos);
  EXPECT_TRUE(j["time"].is_null());
}

// The whitespace-separated cells of the summary row for `call`.
std::vector<std::string> row(const std::string& table, const std::string& call) {
  std::istringstream lines(table);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream cells(line);
    std::vector<std::string> v;
    for (std::string c; cells >> c;) v.push_back(c);
    if (v.size() > 1 && v[1] == call) return v;
  }
  return {};
}

TEST(TraceSummary, CountsErrorsDenialsAndPercentiles) {
  std::ostringstream in;
  for (int i = 1; i <= 100; ++i) {
    TraceRecord r = sample();
    r.latency_us = i;
    if (i % 10 == 0) {
      r.ret = -1;
      r.err = ENOTTY;
    }
    in << format_json(r) << "\n";
  }
  TraceRecord d = sample();
  d.call.name = "INVOKE_WRITE(REG_MR)";
  d.decision = "deny";
  d.err = EPERM;
  in << format_json(d) << "\nnot json\n";
  std::istringstream src(in.str());
  std::ostringstream out;
  SummaryStats st = summarize_trace(src, out);
  EXPECT_EQ(st.records, 101u);
  EXPECT_EQ(st.bad_lines, 1u);
  EXPECT_EQ(row(out.str(), "INVOKE_WRITE(ALLOC_PD)"),
            (std::vector<std::string>{"uverbs", "INVOKE_WRITE(ALLOC_PD)", "100", "10", "0", "50.0",
                                      "99.0"}));
  EXPECT_EQ(
      row(out.str(), "INVOKE_WRITE(REG_MR)"),
      (std::vector<std::string>{"uverbs", "INVOKE_WRITE(REG_MR)", "1", "1", "1", "12.5", "12.5"}));
}

}  // namespace
}  // namespace gdrproxy::proxy
