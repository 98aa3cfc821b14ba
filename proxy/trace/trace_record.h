// One traced device call, from notification to result. The supervisor fills it in two steps:
// at the notification (who, what, decision) and when the result is known (return value, errno,
// decoded outputs, latency). Sinks render completed records.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proxy/decode/decoded_call.h"

namespace gdrproxy::proxy {

struct ProcessIdentity {
  uint32_t host_tid = 0;
  uint32_t host_tgid = 0;
  uint32_t ns_tid = 0;   // the thread id as the container sees it (last NSpid entry)
  uint32_t ns_tgid = 0;  // its process id there (last NStgid entry)
  uint64_t pidns = 0;    // inode of /proc/<tid>/ns/pid
  std::string comm;
};

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
