// The call handler: one trapped call in, one decision out. Given a notification (an ioctl, an
// open, a pidfd_getfd) it finds the device, checks the grants, reads and decodes the argument,
// asks the policy, and says what the session is to do: the answer to the kernel (CONTINUE, an
// errno, an fd to install), the refusal line to print first, and the call's trace record.
// The idea not to miss: the handler never answers, prints or writes a trace itself, and reaches
// the kernel only through the narrow interfaces of call_inputs.h, so a trapped call's path goes
// down (session, handler, decoders and policy) and back up once, and every decision it makes can
// be driven by a unit test with fakes standing for the kernel (tests/engine/call_handler_test.cc).
// One call at a time (the session's mutex); nothing it keeps between calls but counters, the
// denial lines already printed and buffers reused so that the fast path allocates nothing.
#pragma once

#include <linux/seccomp.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "proxy/abi/nvidia_abi.h"
#include "proxy/decode/decoded_call.h"
#include "proxy/devices/device_catalog.h"
#include "proxy/engine/call_inputs.h"
#include "proxy/engine/call_metrics.h"
#include "proxy/engine/denial_log.h"
#include "proxy/engine/session_stats.h"
#include "proxy/gpudirect/dmabuf_check.h"
#include "proxy/observe/trap_copy.h"
#include "proxy/policy/enforcement.h"
#include "proxy/policy/policy.h"
#include "proxy/trace/trace_record.h"

namespace gdrproxy::proxy {

// What the session is to do with one notification, in this order: print `line`, answer, then
// write `record` (when tracing) or, for a traced call let run, have the observer complete it at
// its exit.
struct CallDecision {
  enum class Answer : uint8_t {
    kContinue,  // the call runs in the caller, as if never trapped
    kError,     // it fails with `err` without running
    kFd,        // `fd` is installed in the caller, which gets its number
    // The caller is no longer the thread that trapped: nothing rests on what was read of it, so
    // nothing is printed or recorded (the session's boundary answers EPERM, which reaches no one).
    kNone,
  };
  Answer answer = Answer::kContinue;
  int err = 0;
  bool cloexec = false;         // kFd: the new fd is close-on-exec
  bool note_failed_fd = false;  // kFd: a failed installation is noted in the record
  bool watch_writes = false;    // kContinue: the observer also watches the new fd's write()s
  UniqueFd fd;                  // kFd: the supervisor's own, closed once installed
  std::string line;             // printed before the answer, after the session's prefix
  std::optional<TraceRecord> record;
  // What it is counted under (call_metrics.h): the class of its device, and why it was refused.
  uint8_t call_class = kNoDeviceClass;
  DenialReason denial = DenialReason::kNone;
};

struct CallHandlerSetup {
  const Policy& policy;
  const Grants& grants;
  // Which denials are enforced: the mode and the unknown-driver rule (proxy/policy/).
  Enforcement enforcement;
  bool tracing = false;   // every call is decoded in full and recorded
  bool observed = false;  // traced calls let run are completed at their exit by the observer
  bool broker_pidfd_getfd = false;
  const NvidiaDriverAbi* nvidia_abi = nullptr;  // the tables NVIDIA calls are named with
  bool nvidia_version_known = false;            // the loaded driver's version could be read
  unsigned nvidia_major = 195;                  // the frontend's character major
  bool all_gpus_granted = true;                 // device objects then need no GPU check
  // Requests allowed whatever their parameters on a granted node of their class (sorted).
  std::vector<uint32_t> unread_uvm, unread_frontend;
  // The dma-buf exporters a uverbs registration may name (proxy/policy/dmabuf_provenance.h).
  std::vector<std::string> dmabuf_exporters;
  std::function<uint64_t()> next_seq;  // a trace record's sequence number
};

// A trapped ioctl as the session received it.
struct IoctlNotification {
  const seccomp_notif& req;
  uint64_t t0;  // when it was received
  // Trap copies are loaded (they are counted used or missed), and this call's, if its caller
  // made one.
  bool copies = false;
  std::optional<TrapCopy> copy;
  IoctlPhases* phases = nullptr;  // this call is timed phase by phase into these
};

class CallHandler {
 public:
  CallHandler(CallHandlerSetup setup, CallInputs inputs);

  CallDecision ioctl(IoctlNotification n);
  // open, openat, openat2, creat: a device the broker opens on the host and the caller gets as
  // an fd, a granted node the caller opens itself, a refusal, or anything else let run.
  CallDecision open(const seccomp_notif& req);
  // pidfd_getfd(pidfd, targetfd, flags): performed for the caller with its own credentials, for
  // a target in this sandbox (or its group) that is no runtime's exec helper; else refused.
  CallDecision pidfd_getfd(const seccomp_notif& req);

  // A command its caller wrote to a watched rdma_cm or uverbs fd, seen by the observer at its
  // exit: decoded into `r` (its caller, fd and device already there) and, for uverbs, judged like
  // its ioctl encodings. A would-be denial is said (the line returned, once per process, device
  // and command) and recorded, never enforced: write()s are not trapped (README, Security model).
  std::string observed_write(TraceRecord& r, const DeviceNode& node,
                             std::span<const uint8_t> bytes);

  // The sandbox's pid namespace and its group's (session.h): where pidfd_getfd is brokered.
  void set_pid_namespace(ino_t ns) { pidns_ = ns; }
  void set_peer_namespaces(std::function<bool(ino_t)> is_peer) { is_peer_ = std::move(is_peer); }

  const CallCounts& counts() const { return counts_; }
  // Its counters and the refusals it counted, into a session's stats.
  void add_counts(SessionStats& s) const;
  // The refusal lines (one per process, device and reason; repeats counted).
  DenialLog& denials() { return denials_; }
  const DenialLog& denials() const { return denials_; }

  // What an ioctl's argument says, read from the caller's memory: the decoded call and, for a
  // dma-buf registration the policy restricts, the dma-buf's provenance.
  struct IoctlReading {
    DecodedCall call;
    std::optional<DmabufVerdict> dmabuf;
    // Everything read came from the trap copy (the device and the argument's bytes, copied in
    // the caller's own context while it waited in this notification): nothing to re-validate.
    bool from_trap_copy_only = false;
  };

 private:
  void read_ioctl(pid_t tid, const DeviceNode& node, uint32_t cmd, uint64_t arg, DecodeDepth depth,
                  const TrapCopy* copy, uint64_t* memory_ns);
  void decide_ioctl(CallDecision& d, const IoctlNotification& n, const DeviceNode& node);
  void refuse_ungranted(CallDecision& d, const seccomp_notif& req, int fd, const DeviceNode& node,
                        DecodedCall call, const std::string& reason);
  std::string ungranted_gpu(uint32_t instance);
  void settle(CallDecision& d, TraceRecord& r, const DeviceNode& node, const Verdict& v);
  // A record of the call `req`; its caller's identity is read from /proc now, or, with
  // who_at_exit (a call the observer will report), left to its exit event.
  void begin_record(TraceRecord& r, const seccomp_notif& req, const char* syscall,
                    bool who_at_exit = false);

  CallHandlerSetup setup_;
  CallInputs in_;
  std::optional<ino_t> pidns_;
  std::function<bool(ino_t)> is_peer_;
  DenialLog denials_;
  CallCounts counts_;
  // The ioctl being handled, kept from call to call so that decoding allocates nothing once warm.
  IoctlReading reading_;
};

// A call no decoder names (an ungranted device's, another driver's, one refused in the kernel):
// its class and request, named IOCTL_0x<request>.
DecodedCall undecoded_call(DeviceClass cls, uint32_t cmd);

}  // namespace gdrproxy::proxy
