// The per-call counters an agent exports as metrics (proxy/agent/metrics_*): calls handled, calls
// refused by reason and handler latency, each by the class of device the call was on. The idea
// not to miss: one block per session, written only by that session's receivers under the
// session's mutex (a single writer), so a count is a relaxed load and store on a cache line no
// other session touches: no lock prefix, no shared line, no lock on the call's path; the agent's
// loop reads the blocks with relaxed loads whenever it is scraped.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "proxy/abi/device_class.h"

namespace gdrproxy::proxy {

// What a call is counted under: a device class (DeviceClass's values), pidfd_getfd (brokered,
// on no device), or none of the devices this agent serves (an open of a regular file, an ioctl
// on another driver's fd).
inline constexpr size_t kCallClasses = 8;
inline constexpr uint8_t kPidfdGetfdClass = 6;
inline constexpr uint8_t kNoDeviceClass = 7;
static_assert(static_cast<uint8_t>(DeviceClass::kNvidiaCaps) < kPidfdGetfdClass);
inline uint8_t call_class(DeviceClass c) {
  return static_cast<uint8_t>(c);
}
// "uverbs", "rdma_cm", "nvidia", "nvidia-uvm", "nvidia-caps", "unknown", "pidfd_getfd", "none".
const char* call_class_name(uint8_t c);

// Why a call was refused: a small fixed set (a metric label may take no other value).
enum class DenialReason : uint8_t {
  kNone,
  kUngranted,     // a device (or a GPU by instance) the container was not granted
  kPolicy,        // the policy denied the request or its parameters (enforced)
  kOpenRefused,   // the open broker refused the path's device
  kOpenFailed,    // an open that could not be decided or performed
  kPidfdGetfd,    // a pidfd_getfd not brokered (outside the sandbox, a helper, flags)
  kKernelJudge,   // refused in the kernel by the BPF LSM judge
  kHandlerFault,  // failed closed by the exception boundary
  kCount,
};
inline constexpr size_t kDenialReasons = static_cast<size_t>(DenialReason::kCount);
// "ungranted", "policy", "open_refused", "open_failed", "pidfd_getfd", "kernel_judge",
// "handler_fault" ("" for kNone).
const char* denial_reason_name(DenialReason r);

// Upper bounds of the latency histogram's buckets, in ns (the last bucket, +Inf, is implicit):
// handlers take microseconds; a call that waits on a tenant's filesystem, up to the deadline.
inline constexpr std::array<uint64_t, 13> kLatencyBoundsNs = {
    1'000,   2'500,   5'000,     10'000,     25'000,      50'000,       100'000,
    250'000, 500'000, 1'000'000, 10'000'000, 100'000'000, 1'000'000'000};
inline constexpr size_t kLatencyBuckets = kLatencyBoundsNs.size() + 1;

// A counter with one writer: its increment is a relaxed load and store (no read-modify-write),
// readable from any thread.
class SingleWriterCounter {
 public:
  void add(uint64_t n = 1) {
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

// What one class's calls add up to (a plain copy, summed over blocks).
struct ClassCounts {
  uint64_t calls = 0;
  std::array<uint64_t, kDenialReasons> denied{};    // by DenialReason (kNone unused)
  std::array<uint64_t, kLatencyBuckets> latency{};  // per bucket, not cumulative
  uint64_t latency_sum_ns = 0;
  void add(const ClassCounts& o);
};
using CallCounters = std::array<ClassCounts, kCallClasses>;

// One session's block.
class CallMetrics {
 public:
  // One call handled on `cls`; `denial` kNone when it was not refused; `ns` its handling time
  // when `timed` (every open; one ioctl in kPhaseSampleEvery).
  void count(uint8_t cls, DenialReason denial, bool timed, uint64_t ns) {
    PerClass& p = classes_[cls < kCallClasses ? cls : kNoDeviceClass];
    p.calls.add();
    if (denial != DenialReason::kNone) p.denied[static_cast<size_t>(denial)].add();
    if (!timed) return;
    size_t b = 0;
    while (b < kLatencyBoundsNs.size() && ns > kLatencyBoundsNs[b]) ++b;
    p.latency[b].add();
    p.latency_sum_ns.add(ns);
  }
  // A refusal that was no call the session handled (the kernel's judge, a handler fault).
  void refused(uint8_t cls, DenialReason denial) {
    classes_[cls < kCallClasses ? cls : kNoDeviceClass].denied[static_cast<size_t>(denial)].add();
  }
  // A copy, from any thread.
  CallCounters read() const;

 private:
  struct PerClass {
    SingleWriterCounter calls;
    std::array<SingleWriterCounter, kDenialReasons> denied;
    std::array<SingleWriterCounter, kLatencyBuckets> latency;
    SingleWriterCounter latency_sum_ns;
  };
  std::array<PerClass, kCallClasses> classes_;
};

}  // namespace gdrproxy::proxy
