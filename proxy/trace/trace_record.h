// One traced device call, from notification to result. The supervisor fills it in two steps:
// at the notification (who, what, decision) and when the result is known (return value, errno,
// decoded outputs, latency). Sinks render completed records.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/process_info.h"
#include "proxy/decode/decoded_call.h"

namespace gdrproxy::proxy {

struct TraceRecord {
  uint64_t seq = 0;
  double wall_time = 0;  // seconds since the epoch, at notification
  ProcessIdentity who;
  std::string syscall;  // "ioctl", "openat", ...
  int fd = -1;          // the fd the call used (ioctl), or -1
  std::string device;   // grant name of the device ("uverbs0"), or the opened path
  DecodedCall call;
  std::string decision;  // "allow", "deny", "broker", "pass" (not a device)
  std::string reason;    // rule that decided
  std::optional<int64_t> ret;
  int err = 0;                    // errno when the call failed
  std::vector<DecodedField> out;  // decoded results (new handles, RM status, ...)
  std::optional<double> latency_us;
  std::string note;  // e.g. "result not observed: process exited"
};

std::string format_text(const TraceRecord& r);
std::string format_json(const TraceRecord& r);

}  // namespace gdrproxy::proxy
