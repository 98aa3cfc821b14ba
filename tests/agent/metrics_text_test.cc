// The agent's metrics page (proxy/agent/metrics_text.h) and the registry's cap
// (proxy/agent/metrics_registry.h): what a scraper reads, driven from plain snapshots and from
// the per-session counter blocks the sessions write.
#include <gtest/gtest.h>

#include <string>

#include "proxy/agent/metrics_registry.h"
#include "proxy/agent/metrics_text.h"
#include "proxy/engine/call_metrics.h"

namespace gdrproxy::proxy {
namespace {

bool has_line(const std::string& page, const std::string& line) {
  return page.find("\n" + line + "\n") != std::string::npos || page.rfind(line + "\n", 0) == 0;
}

TEST(MetricsText, LabelValuesEscaped) {
  EXPECT_EQ(escape_label_value("plain-id_1"), "plain-id_1");
  EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  MetricsSnapshot s;
  s.containers.push_back({"evil\"} 1\nfake_metric{x=\"", 3, 1});
  const std::string page = render_metrics(s);
  EXPECT_TRUE(has_line(
      page, "gdrproxy_container_calls_total{container=\"evil\\\"} 1\\nfake_metric{x=\\\"\"} 3"))
      << page;
  EXPECT_EQ(page.find("\nfake_metric"), std::string::npos);
}

TEST(MetricsText, EveryMetricHasHelpAndType) {
  const std::string page = render_metrics(MetricsSnapshot{});
  size_t helps = 0, types = 0;
  for (size_t at = 0; (at = page.find("# HELP ", at)) != std::string::npos; ++at) ++helps;
  for (size_t at = 0; (at = page.find("# TYPE ", at)) != std::string::npos; ++at) ++types;
  EXPECT_EQ(helps, types);
  EXPECT_GE(types, 14u);
  EXPECT_TRUE(has_line(page, "# TYPE gdrproxy_handler_latency_seconds histogram"));
  EXPECT_TRUE(has_line(page, "gdrproxy_judge_state{state=\"off\"} 1"));
  EXPECT_TRUE(has_line(page, "gdrproxy_judge_state{state=\"pinned\"} 0"));
  MetricsSnapshot restarted;
  restarted.restarts = 3;
  EXPECT_TRUE(has_line(render_metrics(restarted), "gdrproxy_agent_restarts_total 3"));
  EXPECT_TRUE(has_line(page, "# TYPE gdrproxy_agent_restarts_total counter"));
}

TEST(MetricsText, HistogramBucketsCumulativeWithSumAndCount) {
  CallMetrics m;
  const uint8_t uverbs = call_class(DeviceClass::kUverbs);
  m.count(uverbs, DenialReason::kNone, true, 800);            // <= 1 us
  m.count(uverbs, DenialReason::kNone, true, 3'000);          // <= 5 us
  m.count(uverbs, DenialReason::kPolicy, true, 7'000'000);    // <= 10 ms
  m.count(uverbs, DenialReason::kNone, true, 5'000'000'000);  // +Inf
  m.count(uverbs, DenialReason::kNone, false, 0);             // not timed
  MetricsSnapshot s;
  s.classes = m.read();
  const std::string page = render_metrics(s);
  const std::string b = "gdrproxy_handler_latency_seconds_bucket{class=\"uverbs\",le=\"";
  EXPECT_TRUE(has_line(page, b + "1e-06\"} 1")) << page;
  EXPECT_TRUE(has_line(page, b + "2.5e-06\"} 1"));
  EXPECT_TRUE(has_line(page, b + "5e-06\"} 2"));
  EXPECT_TRUE(has_line(page, b + "0.001\"} 2"));
  EXPECT_TRUE(has_line(page, b + "0.01\"} 3"));
  EXPECT_TRUE(has_line(page, b + "1\"} 3"));
  EXPECT_TRUE(has_line(page, b + "+Inf\"} 4"));
  EXPECT_TRUE(has_line(page, "gdrproxy_handler_latency_seconds_count{class=\"uverbs\"} 4"));
  EXPECT_TRUE(has_line(page, "gdrproxy_handler_latency_seconds_sum{class=\"uverbs\"} 5.0070038"));
  EXPECT_TRUE(has_line(page, "gdrproxy_calls_total{class=\"uverbs\"} 5"));
  EXPECT_TRUE(has_line(page, "gdrproxy_denials_total{class=\"uverbs\",reason=\"policy\"} 1"));
  EXPECT_TRUE(has_line(page, "gdrproxy_denials_total{class=\"nvidia\",reason=\"policy\"} 0"));
}

TEST(MetricsRegistry, ContainersPastTheCapFoldIntoOther) {
  MetricsRegistry r(2);
  const uint8_t cm = call_class(DeviceClass::kRdmaCm);
  auto a = r.container_started("a");
  auto b = r.container_started("b");
  auto c = r.container_started("c");       // past the cap: folded for its whole life
  auto d = r.container_started("_other");  // the fold's own label: folded
  a->count(cm, DenialReason::kNone, false, 0);
  c->count(cm, DenialReason::kUngranted, false, 0);
  c->count(cm, DenialReason::kNone, false, 0);
  d->count(cm, DenialReason::kNone, false, 0);
  MetricsSnapshot s = r.snapshot();
  ASSERT_EQ(s.containers.size(), 2u);
  EXPECT_EQ(s.containers_folded, 2u);
  EXPECT_EQ(s.other.calls, 3u);
  EXPECT_EQ(s.other.denied, 1u);
  EXPECT_EQ(s.classes[cm].calls, 4u);
  std::string page = render_metrics(s);
  EXPECT_TRUE(has_line(page, "gdrproxy_container_calls_total{container=\"_other\"} 3")) << page;
  EXPECT_TRUE(has_line(page, "gdrproxy_container_calls_total{container=\"a\"} 1"));
  EXPECT_EQ(page.find("container=\"c\""), std::string::npos);
  EXPECT_TRUE(has_line(page, "gdrproxy_containers_folded_total 2"));

  // Ended containers keep counting in the totals and in _other (a counter never goes down); a
  // freed place goes to the next container started.
  r.container_ended("c", 10);
  r.container_ended("a", 5);
  auto e = r.container_started("e");
  e->count(cm, DenialReason::kNone, false, 0);
  s = r.snapshot();
  EXPECT_EQ(s.other.calls, 3u);
  EXPECT_EQ(s.classes[cm].calls, 5u);
  EXPECT_EQ(s.trace_bytes, 15u);
  page = render_metrics(s);
  EXPECT_TRUE(has_line(page, "gdrproxy_container_calls_total{container=\"e\"} 1")) << page;
  EXPECT_EQ(page.find("container=\"a\""), std::string::npos);
}

TEST(MetricsRegistry, AdoptionsByOutcome) {
  MetricsRegistry r;
  r.adoption(AdoptionOutcome::kReattached);
  r.adoption(AdoptionOutcome::kRefused);
  r.listener_lost();
  const std::string page = render_metrics(r.snapshot());
  EXPECT_TRUE(has_line(page, "gdrproxy_adoptions_total{outcome=\"reattached\"} 1")) << page;
  EXPECT_TRUE(has_line(page, "gdrproxy_adoptions_total{outcome=\"new_container\"} 0"));
  EXPECT_TRUE(has_line(page, "gdrproxy_listeners_kept_total 1"));
  EXPECT_TRUE(has_line(page, "gdrproxy_listeners_lost_total 1"));
}

}  // namespace
}  // namespace gdrproxy::proxy
