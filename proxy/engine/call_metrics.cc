#include "proxy/engine/call_metrics.h"

namespace gdrproxy::proxy {

const char* call_class_name(uint8_t c) {
  if (c == kPidfdGetfdClass) return "pidfd_getfd";
  if (c >= kPidfdGetfdClass) return "none";
  return device_class_name(static_cast<DeviceClass>(c));
}

const char* denial_reason_name(DenialReason r) {
  switch (r) {
    case DenialReason::kUngranted:
      return "ungranted";
    case DenialReason::kPolicy:
      return "policy";
    case DenialReason::kOpenRefused:
      return "open_refused";
    case DenialReason::kOpenFailed:
      return "open_failed";
    case DenialReason::kPidfdGetfd:
      return "pidfd_getfd";
    case DenialReason::kKernelJudge:
      return "kernel_judge";
    case DenialReason::kHandlerFault:
      return "handler_fault";
    case DenialReason::kNone:
    case DenialReason::kCount:
      break;
  }
  return "";
}

void ClassCounts::add(const ClassCounts& o) {
  calls += o.calls;
  for (size_t i = 0; i < denied.size(); ++i) denied[i] += o.denied[i];
  for (size_t i = 0; i < latency.size(); ++i) latency[i] += o.latency[i];
  latency_sum_ns += o.latency_sum_ns;
}

CallCounters CallMetrics::read() const {
  CallCounters out;
  for (size_t c = 0; c < kCallClasses; ++c) {
    const PerClass& p = classes_[c];
    ClassCounts& o = out[c];
    o.calls = p.calls.get();
    for (size_t i = 0; i < kDenialReasons; ++i) o.denied[i] = p.denied[i].get();
    for (size_t i = 0; i < kLatencyBuckets; ++i) o.latency[i] = p.latency[i].get();
    o.latency_sum_ns = p.latency_sum_ns.get();
  }
  return out;
}

}  // namespace gdrproxy::proxy
