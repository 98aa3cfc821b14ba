#include "proxy/agent/metrics_text.h"

#include <charconv>
#include <cstdio>

namespace gdrproxy::proxy {

namespace {

class Page {
 public:
  void head(const char* name, const char* type, const char* help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  // `labels`: already rendered ({a="b",...}) or empty.
  void sample(const std::string& name, const std::string& labels, uint64_t v) {
    out_ += name + labels + ' ' + std::to_string(v) + '\n';
  }
  void sample(const std::string& name, const std::string& labels, double v) {
    char buf[64];  // the shortest text that reads back as `v`
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_ += name + labels + ' ' + std::string(buf, r.ptr) + '\n';
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

std::string label(const char* name, std::string_view value) {
  return std::string(name) + "=\"" + escape_label_value(value) + "\"";
}
std::string labels(std::initializer_list<std::string> ls) {
  std::string out = "{";
  for (const std::string& l : ls) out += (out.size() > 1 ? "," : "") + l;
  return out + "}";
}

std::string seconds_label(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", double(ns) / 1e9);
  return buf;
}

}  // namespace

const char* adoption_outcome_name(AdoptionOutcome o) {
  switch (o) {
    case AdoptionOutcome::kNewContainer:
      return "new_container";
    case AdoptionOutcome::kJoined:
      return "joined";
    case AdoptionOutcome::kReattached:
      return "reattached";
    case AdoptionOutcome::kRefused:
      return "refused";
    case AdoptionOutcome::kCount:
      break;
  }
  return "";
}

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (const char ch : v) {
    if (ch == '\\')
      out += "\\\\";
    else if (ch == '"')
      out += "\\\"";
    else if (ch == '\n')
      out += "\\n";
    else
      out += ch;
  }
  return out;
}

std::string render_metrics(const MetricsSnapshot& s) {
  Page p;
  p.head("gdrproxy_containers", "gauge", "Containers served now, by mode.");
  p.sample("gdrproxy_containers", labels({label("mode", "enforce")}), s.containers_enforce);
  p.sample("gdrproxy_containers", labels({label("mode", "trace")}), s.containers_trace);
  p.head("gdrproxy_containers_degraded", "gauge",
         "Containers served now whose session is degraded (a call was not answered in time).");
  p.sample("gdrproxy_containers_degraded", "", s.containers_degraded);

  p.head("gdrproxy_calls_total", "counter", "Trapped calls handled, by device class.");
  for (uint8_t c = 0; c < kCallClasses; ++c)
    p.sample("gdrproxy_calls_total", labels({label("class", call_class_name(c))}),
             s.classes[c].calls);
  p.head("gdrproxy_denials_total", "counter", "Trapped calls refused, by device class and reason.");
  for (uint8_t c = 0; c < kCallClasses; ++c)
    for (size_t r = 1; r < kDenialReasons; ++r)
      p.sample("gdrproxy_denials_total",
               labels({label("class", call_class_name(c)),
                       label("reason", denial_reason_name(static_cast<DenialReason>(r)))}),
               s.classes[c].denied[r]);
  p.head("gdrproxy_handler_latency_seconds", "histogram",
         "Time to handle a trapped call (every open, one ioctl in 32), by device class.");
  for (uint8_t c = 0; c < kCallClasses; ++c) {
    const ClassCounts& k = s.classes[c];
    const std::string cls = label("class", call_class_name(c));
    uint64_t cumulative = 0;
    for (size_t b = 0; b < kLatencyBuckets; ++b) {
      cumulative += k.latency[b];
      const std::string le =
          b < kLatencyBoundsNs.size() ? seconds_label(kLatencyBoundsNs[b]) : "+Inf";
      p.sample("gdrproxy_handler_latency_seconds_bucket", labels({cls, label("le", le)}),
               cumulative);
    }
    p.sample("gdrproxy_handler_latency_seconds_sum", labels({cls}), double(k.latency_sum_ns) / 1e9);
    p.sample("gdrproxy_handler_latency_seconds_count", labels({cls}), cumulative);
  }

  p.head("gdrproxy_container_calls_total", "counter",
         "Trapped calls handled, by container (past the cap, together as container=\"_other\").");
  for (const ContainerCalls& c : s.containers)
    p.sample("gdrproxy_container_calls_total", labels({label("container", c.id)}), c.calls);
  p.sample("gdrproxy_container_calls_total", labels({label("container", s.other.id)}),
           s.other.calls);
  p.head("gdrproxy_container_denials_total", "counter",
         "Trapped calls refused, by container (past the cap, together as container=\"_other\").");
  for (const ContainerCalls& c : s.containers)
    p.sample("gdrproxy_container_denials_total", labels({label("container", c.id)}), c.denied);
  p.sample("gdrproxy_container_denials_total", labels({label("container", s.other.id)}),
           s.other.denied);
  p.head("gdrproxy_containers_folded_total", "counter",
         "Containers counted under container=\"_other\" because the per-container cap was "
         "reached.");
  p.sample("gdrproxy_containers_folded_total", "", s.containers_folded);

  p.head("gdrproxy_adoptions_total", "counter",
         "Processes handed to the agent (by a runtime or the fd store), by outcome.");
  for (size_t o = 0; o < kAdoptionOutcomes; ++o)
    p.sample("gdrproxy_adoptions_total",
             labels({label("outcome", adoption_outcome_name(static_cast<AdoptionOutcome>(o)))}),
             s.adoptions[o]);
  p.head("gdrproxy_listeners_kept_total", "counter",
         "Listeners kept across a restart: re-attached from the fd store.");
  p.sample("gdrproxy_listeners_kept_total", "",
           s.adoptions[static_cast<size_t>(AdoptionOutcome::kReattached)]);
  p.head("gdrproxy_listeners_lost_total", "counter",
         "Listeners kept by the fd store for this agent that it could not re-attach (their "
         "trapped calls fail with ENOSYS).");
  p.sample("gdrproxy_listeners_lost_total", "", s.listeners_lost);
  p.head("gdrproxy_agent_start_time_seconds", "gauge",
         "When this agent started, in seconds since the epoch.");
  p.sample("gdrproxy_agent_start_time_seconds", "", s.start_time_seconds);
  p.head("gdrproxy_agent_restarts_total", "counter",
         "Agents started on this node before this one since its boot (counted in agent.starts "
         "beside the control socket).");
  p.sample("gdrproxy_agent_restarts_total", "", s.restarts);
  p.head("gdrproxy_judge_state", "gauge",
         "The BPF LSM judge's state: one series at 1 (off, unpinned or pinned).");
  for (const char* st : {"off", "unpinned", "pinned"})
    p.sample("gdrproxy_judge_state", labels({label("state", st)}),
             uint64_t{std::string_view(st) == s.judge_state});
  p.head("gdrproxy_trace_bytes_total", "counter", "Bytes written to containers' JSON traces.");
  p.sample("gdrproxy_trace_bytes_total", "", s.trace_bytes);
  return p.take();
}

}  // namespace gdrproxy::proxy
