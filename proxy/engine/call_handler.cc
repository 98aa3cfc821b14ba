// The call handler's decisions (call_handler.h). Mechanism only: what is allowed comes from the
// Policy, what a call means from the decoders; every line it writes is the caller's bytes
// escaped (printable), and the session prints it before it answers, so a refusal's line
// precedes whatever the caller prints about its error.
#include "proxy/engine/call_handler.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <utility>

#include "base/escape.h"
#include "base/hex.h"
#include "base/hot_path.h"
#include "proxy/decode/nvidia_decoder.h"
#include "proxy/decode/rdma_cm_decoder.h"
#include "proxy/decode/uverbs_decoder.h"
#include "proxy/engine/clock.h"
#include "proxy/engine/line_format.h"
#include "proxy/policy/dmabuf_provenance.h"

namespace gdrproxy::proxy {

DecodedCall undecoded_call(DeviceClass cls, uint32_t cmd) {
  DecodedCall call;
  call.device_class = cls;
  call.cmd = cmd;
  call.name = "IOCTL_" + hex(cmd, 8);
  return call;
}

CallHandler::CallHandler(CallHandlerSetup setup, CallInputs inputs)
    : setup_(std::move(setup)), in_(inputs) {}

void CallHandler::add_counts(SessionStats& s) const {
  s.allowed_unread = counts_.allowed_unread;
  s.trap_copies_used = counts_.trap_copies_used;
  s.trap_copies_missed = counts_.trap_copies_missed;
  s.trap_copies_torn = counts_.trap_copies_torn;
  s.denied = denials_.total();
  s.repeated_denials = denials_.repeats();
}

void CallHandler::begin_record(TraceRecord& r, const seccomp_notif& req, const char* syscall,
                               bool who_at_exit) {
  r.seq = setup_.next_seq();
  r.wall_time = wall_seconds();
  if (who_at_exit)
    r.who.host_tid = req.pid;  // the rest comes with the exit event (host_tgid 0 until then)
  else
    r.who = in_.callers.identity(static_cast<pid_t>(req.pid));
  r.syscall = syscall;
}

// Fills reading_, whose storage is kept from call to call.
GDRPROXY_HOT void CallHandler::read_ioctl(pid_t tid, const DeviceNode& node, uint32_t cmd,
                                          uint64_t arg, DecodeDepth depth, const TrapCopy* copy,
                                          uint64_t* memory_ns) {
  IoctlReading& out = reading_;
  const MemoryReader& mem = copy ? in_.memory.begin(tid, memory_ns, copy->arg(), copy->bytes())
                                 : in_.memory.begin(tid, memory_ns, 0, {});
  const DeviceClass cls = node.device_class;
  switch (cls) {
    case DeviceClass::kUverbs:
      // Driver-namespace ids are named and judged under the provider of the node's device.
      decode_uverbs_ioctl(out.call, cmd, arg, mem, depth, node.rdma_driver);
      break;
    case DeviceClass::kNvidiaFrontend:
      decode_nvidia_frontend_ioctl(out.call, cmd, arg, mem, *setup_.nvidia_abi, depth);
      break;
    case DeviceClass::kNvidiaUvm:
      decode_nvidia_uvm_ioctl(out.call, cmd, arg, mem, *setup_.nvidia_abi, depth);
      break;
    default:
      out.call = undecoded_call(cls, cmd);
  }
  // The dma-bufs it hands the device, for the provenance rule: the reads of their fds can block
  // on the tenant too (a dma-buf fd may be a file on a hung mount).
  const std::vector<std::string>& exporters = setup_.dmabuf_exporters;
  out.dmabuf = dmabuf_provenance(out.call.keys, exporters,
                                 [&](int fd) { return in_.files.dmabuf(tid, fd, exporters); });
  out.from_trap_copy_only = copy && !in_.memory.read_remotely() && !out.dmabuf;
}

GDRPROXY_HOT CallDecision CallHandler::ioctl(IoctlNotification n) {
  CallDecision d;
  const seccomp_notif& req = n.req;
  const int fd = static_cast<int>(req.data.args[0]);
  const uint32_t cmd = static_cast<uint32_t>(req.data.args[1]);
  const uint64_t arg = req.data.args[2];
  const pid_t tid = static_cast<pid_t>(req.pid);
  // The device behind the fd decides the class and is checked against the grants, the same way
  // with or without a trace: the request number alone says nothing about which driver gets it
  // (NVIDIA ignores the type byte; any fd can carry any number).
  // The caller's context may have copied both the device and the argument's first bytes at its
  // trap (proxy/observe/trap_copy.h): then neither is asked of the kernel again.
  if (n.copies) ++(n.copy ? counts_.trap_copies_used : counts_.trap_copies_missed);
  IoctlPhases* ph = n.phases;
  // At most twice: a copy rewritten while its bytes were read (its caller interrupted and
  // trapped again, or another thread of the same slot) is dropped, and the call looked up
  // without it.
  for (;;) {
    const DeviceNode* node = nullptr;
    if (!n.copy)
      in_.files.inspect_fd(tid, fd, node);
    else if (n.copy->has_file() && S_ISCHR(n.copy->mode()))
      node = in_.files.device(n.copy->rdev());
    const uint64_t t_read = ph ? monotonic_ns() : 0;
    if (ph) ph->lookup += t_read - n.t0;
    // Not one of our devices (the filter matches by number only): let it be.
    if (!node) return d;
    d.call_class = call_class(node->device_class);
    if (!setup_.grants.granted(*node)) {
      // An fd of an ungranted device (inherited, passed over a socket, or opened around the
      // broker) is refused whatever the mode: grants are never advisory.
      refuse_ungranted(d, req, fd, *node, undecoded_call(node->device_class, cmd),
                       node->uncatalogued ? ungranted_reason(*node)
                                          : "device " + node->name + " is not granted");
      return d;
    }
    // A request the policy allows whatever its parameters, on a granted node of its class: no
    // read, no decode (enforce mode without a trace only; see CallHandlerSetup::unread_uvm).
    const std::vector<uint32_t>* unread =
        node->device_class == DeviceClass::kNvidiaUvm        ? &setup_.unread_uvm
        : node->device_class == DeviceClass::kNvidiaFrontend ? &setup_.unread_frontend
                                                             : nullptr;
    if (unread && std::binary_search(unread->begin(), unread->end(), cmd)) {
      ++counts_.allowed_unread;
      return d;
    }
    // Without a trace only what the policy matches on is decoded.
    const DecodeDepth depth = setup_.tracing ? DecodeDepth::kFull : DecodeDepth::kPolicy;
    // The reads can block on the tenant (its argument may lie in a mapping of a file on a hung
    // FUSE mount): they stall this session's thread only, and the watchdog answers at the
    // deadline.
    uint64_t memory = 0;
    read_ioctl(tid, *node, cmd, arg, depth, n.copy ? &*n.copy : nullptr, ph ? &memory : nullptr);
    if (ph) {
      const uint64_t read_ns = monotonic_ns() - t_read;
      ph->memory += memory;
      ph->decode += read_ns > memory ? read_ns - memory : 0;
    }
    if (!n.copy || n.copy->unchanged()) {
      decide_ioctl(d, n, *node);
      return d;
    }
    n.copy.reset();
    --counts_.trap_copies_used;
    ++counts_.trap_copies_missed;
    ++counts_.trap_copies_torn;
  }
}

GDRPROXY_HOT void CallHandler::decide_ioctl(CallDecision& d, const IoctlNotification& n,
                                            const DeviceNode& node) {
  const seccomp_notif& req = n.req;
  const int fd = static_cast<int>(req.data.args[0]);
  DecodedCall& call = reading_.call;
  IoctlPhases* ph = n.phases;
  const uint64_t t_policy = ph ? monotonic_ns() : 0;
  // What was read is only trustworthy if the caller is still the one that trapped (its tid may
  // have died and been reused). The answer cannot go astray: the kernel takes it only for this
  // notification, and a dead caller's is gone. So the check is paid only where something else
  // rests on what was read: a trace record, a printed line, a refusal.
  const auto still_valid = [&] {
    const uint64_t t = ph ? monotonic_ns() : 0;
    const bool valid = in_.callers.still_waiting(req.id);
    if (ph) ph->answer += monotonic_ns() - t;
    if (!valid) d.answer = CallDecision::Answer::kNone;
    return valid;
  };
  if (call.keys.nv_device_instance && !setup_.all_gpus_granted) {
    // A device object names its GPU by instance, through whichever frontend fd: the grant is
    // checked on the GPU the driver says that instance is.
    std::string why = ungranted_gpu(*call.keys.nv_device_instance);
    if (!why.empty()) {
      if (still_valid()) refuse_ungranted(d, req, fd, node, std::move(call), why);
      return;
    }
  }
  Verdict v = setup_.policy.evaluate(call, setup_.tracing);
  // GPUDirect: a registered dma-buf must come from a granted GPU.
  if (reading_.dmabuf)
    apply_dmabuf_provenance(setup_.policy, *reading_.dmabuf, v, call, setup_.tracing);
  if (ph) ph->policy += monotonic_ns() - t_policy;
  if (v.action == Action::kAllow && !setup_.tracing) return;  // enforce's common case: CONTINUE
  // An allowed call traced from its trap copy alone needs no check: its bytes and device were
  // copied by the caller itself during this notification, and its record's caller comes from the
  // observer's exit event, in the caller's own context. A refusal is checked all the same: its
  // printed line names the caller from /proc.
  const bool proven = reading_.from_trap_copy_only && setup_.observed && v.action == Action::kAllow;
  if (!proven && !still_valid()) return;
  TraceRecord& r = d.record.emplace();
  if (setup_.tracing || (v.action == Action::kDeny && v.log)) {
    // An allowed call's record gets its caller from the observer's exit event, read in the
    // caller's own context: no /proc read on the hot path.
    begin_record(r, req, "ioctl", setup_.observed && v.action == Action::kAllow);
    r.fd = fd;
    r.device = node.name;
    r.call = std::move(call);
    r.reason = v.reason;
  }
  settle(d, r, node, v);
}

// Refuses a call on a device (or naming a GPU) the sandbox was not granted, whatever the mode:
// grants are never advisory.
void CallHandler::refuse_ungranted(CallDecision& d, const seccomp_notif& req, int fd,
                                   const DeviceNode& node, DecodedCall call,
                                   const std::string& reason) {
  TraceRecord& r = d.record.emplace();
  begin_record(r, req, "ioctl");
  r.fd = fd;
  r.device = node.name;
  r.call = std::move(call);
  r.reason = reason;
  r.decision = "deny";
  r.ret = -1;
  r.err = setup_.policy.open_errno();
  if (denials_.first(r.who.host_tgid, node.name, r.reason))
    format_line(d.line, "denied %s on %s by pid %u (ns pid %u): %s -> %s",
                printable(r.call.name).c_str(), node.path.c_str(), r.who.host_tid, r.who.ns_tid,
                printable(r.reason).c_str(), errno_name(r.err));
  d.answer = CallDecision::Answer::kError;
  d.err = r.err;
  d.denial = DenialReason::kUngranted;
}

// Why NVIDIA device instance `instance` may not be used here (empty: it is a granted GPU). The
// driver is asked at each call, since instances are given out as GPUs attach; anything it cannot
// answer is a refusal (the driver itself maps an unpopulated instance to its first GPU).
std::string CallHandler::ungranted_gpu(uint32_t instance) {
  const std::string what = "NV01_DEVICE_0 device instance " + std::to_string(instance);
  if (!setup_.nvidia_version_known)
    return what + ": the NVIDIA driver version is unknown, so its GPU cannot be told";
  std::string why;
  const auto gpus = in_.gpus.gpus(why);
  if (!gpus) return what + ": cannot ask the driver which GPU it is (" + why + ")";
  const NvidiaGpu* g = gpu_of_device_instance(*gpus, instance);
  if (!g) return what + " is no attached GPU";
  const DeviceNode* n = in_.files.device(makedev(setup_.nvidia_major, g->minor));
  if (!n || !setup_.grants.granted(*n))
    return what + " is GPU " + (n ? n->name : "minor " + std::to_string(g->minor)) +
           ", which is not granted";
  return {};
}

// The answer to an allowed or denied device call, the line said about it, and its record's
// decision.
void CallHandler::settle(CallDecision& d, TraceRecord& r, const DeviceNode& node,
                         const Verdict& v) {
  const bool nv = node.device_class == DeviceClass::kNvidiaFrontend ||
                  node.device_class == DeviceClass::kNvidiaUvm;
  if (v.action == Action::kDeny && setup_.enforcement.enforced(node.device_class)) {
    r.decision = "deny";
    r.ret = -1;
    r.err = v.err;
    // An NVIDIA RM call names its command or class, so that a rule can be written for it; each
    // command refused gets its own line once.
    std::string what = r.call.name;
    if (nv && setup_.nvidia_abi) {
      const std::string subject = nvidia_call_subject(r.call, *setup_.nvidia_abi);
      if (!subject.empty()) what += " " + subject;
    }
    if (denials_.first(r.who.host_tgid, node.name, v.reason + " " + what) && v.log)
      format_line(d.line, "denied %s %s by pid %u (ns pid %u): %s -> %s", node.name.c_str(),
                  printable(what).c_str(), r.who.host_tid, r.who.ns_tid,
                  printable(v.reason).c_str(), errno_name(v.err));
    d.answer = CallDecision::Answer::kError;
    d.err = v.err;
    d.denial = DenialReason::kPolicy;
    return;
  }
  r.decision = v.action == Action::kDeny ? "allow (would deny: trace mode)" : "allow";
  if (v.action == Action::kDeny && v.log)
    format_line(d.line, "%s, would deny %s %s: %s", setup_.enforcement.why_not(), node.name.c_str(),
                printable(r.call.name).c_str(), printable(v.reason).c_str());
}

std::string CallHandler::observed_write(TraceRecord& r, const DeviceNode& node,
                                        std::span<const uint8_t> bytes) {
  std::string line;
  BufferMemory mem;
  constexpr uint64_t kAt = 0x10000;
  mem.map(kAt, std::vector<uint8_t>(bytes.begin(), bytes.end()));
  r.decision = "observed";
  if (node.device_class != DeviceClass::kUverbs) {
    r.call = decode_rdma_cm_write(kAt, bytes.size(), mem);
    return line;
  }
  r.call = decode_uverbs_write(kAt, bytes.size(), mem);
  const Verdict v = setup_.policy.evaluate(r.call);
  if (v.action != Action::kDeny) return line;
  r.decision = "observed (policy would deny: write() commands are not trapped)";
  r.reason = v.reason;
  if (denials_.first(r.who.host_tgid, node.name, "write " + r.call.name))
    format_line(line,
                "not enforceable: pid %u (ns pid %u) sent %s to %s as write(), which the policy "
                "denies (%s); write() commands are observed, not trapped",
                r.who.host_tid, r.who.ns_tid, printable(r.call.name).c_str(), node.name.c_str(),
                printable(v.reason).c_str());
  return line;
}

// The target is the process behind the caller's pidfd (taken from the caller): it must belong to
// this sandbox's pid namespace (or a group peer's) and have exec'd a program of its container,
// not be a runtime's helper; the fd is then taken by a prober with the caller's own credentials
// (proxy/broker/fd_broker.h), so the kernel refuses what the caller could not take itself.
// Without brokering the call is refused: an OCI profile always traps it.
CallDecision CallHandler::pidfd_getfd(const seccomp_notif& req) {
  CallDecision d;
  d.call_class = kPidfdGetfdClass;
  const pid_t tid = static_cast<pid_t>(req.pid);
  const int caller_pidfd_nr = static_cast<int>(req.data.args[0]);
  const int target_fd = static_cast<int>(req.data.args[1]);
  TraceRecord& r = d.record.emplace();
  begin_record(r, req, "pidfd_getfd");
  r.call.name = "pidfd_getfd";
  r.call.args = {{"pidfd", std::to_string(caller_pidfd_nr)},
                 {"targetfd", std::to_string(target_fd)}};
  const auto refuse = [&](int err, const std::string& reason) {
    r.decision = "deny";
    r.ret = -1;
    r.err = err;
    r.reason = reason;
    if (denials_.first(r.who.host_tgid, "pidfd_getfd", reason))
      format_line(d.line, "denied pidfd_getfd by pid %u (ns pid %u): %s -> %s", r.who.host_tid,
                  r.who.ns_tid, printable(reason).c_str(), errno_name(err));
    d.answer = CallDecision::Answer::kError;
    d.err = err;
    d.denial = DenialReason::kPidfdGetfd;
  };
  const ino_t own = in_.pidfds.own_pid_namespace();
  if (!setup_.broker_pidfd_getfd) {
    refuse(EPERM, "pidfd_getfd is not brokered for this sandbox");
    return d;
  }
  if (req.data.args[2] != 0) {
    refuse(EINVAL, "pidfd_getfd is not brokered with these flags");
    return d;
  }
  if (!pidns_ || *pidns_ == own) {
    refuse(EPERM, "this sandbox has no pid namespace of its own to broker pidfd_getfd within");
    return d;
  }
  const PidfdTargets::Target t = in_.pidfds.target(tid, caller_pidfd_nr);
  if (t.status == PidfdTargets::Target::Status::kCallerGone) {
    refuse(ESRCH, "the caller is gone");
    return d;
  }
  if (t.status == PidfdTargets::Target::Status::kUnreadable) {
    refuse(EBADF, "the caller's fd " + std::to_string(caller_pidfd_nr) + " cannot be read");
    return d;
  }
  const std::string who = "pid " + std::to_string(t.pid);
  if (t.pid <= 0 || !t.alive) {
    refuse(t.pid == -1 ? ESRCH : EBADF,
           "fd " + std::to_string(caller_pidfd_nr) + " is not a pidfd of a living process");
  } else if (t.pidns != *pidns_ && (t.pidns == own || !is_peer_ || !is_peer_(t.pidns))) {
    refuse(EPERM, who + " is outside this sandbox" + (is_peer_ ? " and its group" : ""));
  } else if (t.helper) {
    refuse(EPERM, who + ": " + *t.helper);
  } else if (!in_.callers.still_waiting(req.id)) {
    d.answer = CallDecision::Answer::kNone;
    d.record.reset();
  } else {
    // The caller is blocked in this call (its id was valid just now): its thread's credentials
    // are the ones the prober takes.
    TakenFd got = in_.pidfds.take(tid, t.pidfd.get(), target_fd);
    if (!got.fd) {
      refuse(got.err, "fd " + std::to_string(target_fd) + " of " + who + ": " + got.why);
    } else {
      d.answer = CallDecision::Answer::kFd;
      d.fd = std::move(got.fd);
      d.cloexec = true;  // pidfd_getfd sets O_CLOEXEC
      r.decision = "broker";
    }
  }
  return d;
}

CallDecision CallHandler::open(const seccomp_notif& req) {
  CallDecision d;
  OpenCall call;
  OpenDecision od;
  // Arguments it cannot read: not an open the broker knows; it runs as the caller made it.
  if (!in_.opens.decide(req, call, od)) return d;
  // The brokered host fd is closed on every way out of here, a throw included.
  UniqueFd host_fd = std::move(od.host_fd);
  if (!in_.callers.still_waiting(req.id)) {
    d.answer = CallDecision::Answer::kNone;
    return d;
  }
  if (od.kind == OpenDecision::Kind::kPass) return d;
  if (od.node) d.call_class = call_class(od.node->device_class);
  TraceRecord& r = d.record.emplace();
  begin_record(r, req, req.data.nr == SYS_openat2 ? "openat2" : "openat");
  r.device = od.node ? od.node->name : quote_text(od.path);
  r.call.device_class = od.node ? od.node->device_class : DeviceClass::kUnknown;
  r.call.name = "open";
  char flags[24];
  std::snprintf(flags, sizeof flags, "0%llo", static_cast<unsigned long long>(call.flags));
  r.call.args = {{"path", quote_text(od.path)}, {"flags", flags}};
  r.reason = od.reason;
  if (od.kind == OpenDecision::Kind::kCallerOpens) {
    // Granted, and the caller opens it itself (Landlock allows exactly this node). The result
    // is the caller's own: observed at syscall exit when tracing. For rdma_cm and uverbs the
    // observer also starts watching the new fd's writes (rdma_cm commands, legacy verbs).
    r.decision = "allow";
    d.watch_writes = od.node->device_class == DeviceClass::kRdmaCm ||
                     od.node->device_class == DeviceClass::kUverbs;
    return d;
  }
  if (od.kind == OpenDecision::Kind::kDeny || od.kind == OpenDecision::Kind::kUndecidable ||
      !host_fd) {
    r.decision = "deny";
    r.ret = -1;
    r.err = od.err;
    if (od.kind == OpenDecision::Kind::kDeny) {
      if (denials_.first(r.who.host_tgid, od.node->path, od.reason))
        format_line(d.line, "denied open of %s (%s) by pid %u (ns pid %u): %s -> %s",
                    quote_text(od.path).c_str(), od.node->path.c_str(), r.who.host_tid,
                    r.who.ns_tid, printable(od.reason).c_str(), errno_name(od.err));
    } else if (od.kind == OpenDecision::Kind::kUndecidable) {
      if (denials_.first(r.who.host_tgid, od.path, od.reason))
        format_line(d.line, "denied open of %s by pid %u (ns pid %u): %s -> %s",
                    quote_text(od.path).c_str(), r.who.host_tid, r.who.ns_tid,
                    printable(od.reason).c_str(), errno_name(od.err));
    }
    d.answer = CallDecision::Answer::kError;
    d.err = od.err;
    d.denial = od.kind == OpenDecision::Kind::kDeny ? DenialReason::kOpenRefused
                                                    : DenialReason::kOpenFailed;
    return d;
  }
  d.answer = CallDecision::Answer::kFd;
  d.fd = std::move(host_fd);
  d.cloexec = (call.flags & O_CLOEXEC) != 0;
  d.note_failed_fd = true;
  r.decision = "broker";
  return d;
}

}  // namespace gdrproxy::proxy
