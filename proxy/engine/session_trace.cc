#include "proxy/engine/session_trace.h"

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <span>
#include <vector>

#include "base/kernel_dev.h"
#include "proxy/decode/nvidia_decoder.h"
#include "proxy/decode/uverbs_decoder.h"
#include "proxy/engine/clock.h"

namespace gdrproxy::proxy {
namespace {

// "Some rdma_cm device": a write seen after its fd was closed, on an fd whose open was not
// recorded (the BPF program marks rdma_cm fds at their open itself; past the cap).
const DeviceNode kAnyRdmaCm{"/dev/infiniband/rdma_cm", "rdma_cm", DeviceClass::kRdmaCm, 0, true};

bool alive(uint32_t id) {
  struct stat st;
  return ::stat(("/proc/" + std::to_string(id)).c_str(), &st) == 0;
}

void set_result(TraceRecord& r, int64_t ret) {
  if (ret < 0) {
    r.ret = -1;
    r.err = static_cast<int>(-ret);
  } else {
    r.ret = ret;
  }
}

}  // namespace

ProcessIdentity identity_at_exit(const gdrproxy_exit_event& e) {
  ProcessIdentity who;
  who.host_tid = e.tid;
  who.host_tgid = e.tgid;
  who.ns_tid = e.ns_tid;
  who.ns_tgid = e.ns_tgid;
  who.pidns = e.pidns;
  who.comm.assign(e.comm, strnlen(e.comm, sizeof e.comm));
  return who;
}

SessionTrace::SessionTrace(bool text, std::unique_ptr<JsonTraceWriter> json, ExitObserver* observer,
                           Callers& callers, CallerFiles& files, CallHandler& handler,
                           std::string log_prefix, std::function<uint64_t()> next_seq)
    : text_(text),
      json_(std::move(json)),
      observer_(observer),
      callers_(callers),
      files_(files),
      handler_(handler),
      log_prefix_(std::move(log_prefix)),
      next_seq_(std::move(next_seq)) {}

void SessionTrace::add_counts(SessionStats& s) const {
  s.observer_lost = observer_ ? observer_->lost() : 0;
  s.observer_skipped = observer_ ? observer_->skipped() : 0;
  s.results_unobserved = results_unobserved_;
  s.fds_watched = watched_fds_.size();
  s.fds_unwatched_gone = fds_unwatched_gone_;
}

void SessionTrace::emit(TraceRecord&& r) {
  if (text_) std::fprintf(stderr, "%s\n", format_text(r).c_str());
  // Formatted and written by the writer's thread; flushed each second (the sweep) and at exit.
  if (json_) json_->push(std::move(r));
}

std::optional<uint32_t> SessionTrace::await(TraceRecord& r, pid_t tid, uint64_t t0,
                                            bool watch_writes) {
  if (!observer_) return std::nullopt;
  const uint32_t index = pending_.take();
  if (!observer_->expect(tid, r.seq, cookie_of(index), r.call.result_regions[0],
                         r.call.result_regions[1], watch_writes)) {
    pending_.release(index);
    return std::nullopt;
  }
  // The result goes by the cookie to this session, to this entry, which is filled and published
  // before the call runs: its result cannot come before it.
  PendingResults::Call& p = pending_.at(index);
  p.record = std::move(r);
  p.t0 = t0;
  p.tid = static_cast<uint32_t>(tid);
  pending_.publish(index);
  return index;
}

void SessionTrace::answered(std::optional<uint32_t> index, uint64_t seq, TraceRecord& r, pid_t tid,
                            bool ran) {
  if (!index) {
    r.note = "result not observed";
    if (!r.who.host_tgid) r.who = callers_.identity(tid);
    emit(std::move(r));
    return;
  }
  if (ran) return;
  observer_->forget(tid);
  // The call never ran, so no result claims it; a sweep may have given it up meanwhile.
  if (PendingResults::Call* c = pending_.claim(*index, seq)) {
    TraceRecord gone = std::move(c->record);
    pending_.release(*index);
    // Its tid alone: /proc would now describe whoever reuses it.
    gone.note = "caller gone before the call ran";
    emit(std::move(gone));
  }
}

// A command the caller wrote to its own rdma_cm or uverbs fd, seen by the BPF observer. Observed
// only: the write was never trapped (README, Security model).
void SessionTrace::on_write(const gdrproxy_exit_event& e) {
  const ProcessIdentity who = identity_at_exit(e);
  // The fd was marked at the caller's open. The program read the device it named when the write
  // entered the kernel: the write is named by it, whatever the fd names by now (closed, reused,
  // its process gone). Without that (no device read), by what the fd names now, else by the node
  // its open named. A write to anything but an rdma_cm or uverbs node means the number was
  // reused: the fd is no longer watched.
  const DeviceNode* node = nullptr;
  bool open_now = true;
  if (e.rdev != 0)
    node = files_.device(dev_from_kernel(e.rdev));
  else
    open_now = files_.inspect_fd(static_cast<pid_t>(e.tid), static_cast<int>(e.fd), node);
  const auto watched = watched_fds_.find({who.host_tgid, e.fd});
  if (open_now && (!node || (node->device_class != DeviceClass::kRdmaCm &&
                             node->device_class != DeviceClass::kUverbs))) {
    if (observer_) observer_->unwatch_cm_fd(who.host_tgid, e.fd);
    if (watched != watched_fds_.end()) watched_fds_.erase(watched);
    return;
  }
  // Gone (closed, or its process exited before the event was read): the node its open named.
  if (!node) node = watched != watched_fds_.end() ? &watched->second : &kAnyRdmaCm;
  TraceRecord r;
  r.seq = next_seq_();
  r.wall_time = wall_seconds();
  r.who = who;
  r.syscall = "write";
  r.fd = static_cast<int>(e.fd);
  r.device = node->name;
  const std::string line = handler_.observed_write(r, *node, {e.region0, e.len0});
  if (!line.empty()) std::fprintf(stderr, "%s%s\n", log_prefix_.c_str(), line.c_str());
  set_result(r, e.ret);
  r.latency_us = e.exit_ns > e.enter_ns ? double(e.exit_ns - e.enter_ns) / 1e3 : 0.0;
  emit(std::move(r));
}

void SessionTrace::on_result(const gdrproxy_exit_event& e) {
  // The entry the cookie names, if it still waits for this very call (not given up and reused).
  const uint32_t index = static_cast<uint32_t>(e.cookie);
  PendingResults::Call* call = pending_.claim(index, e.seq);
  if (!call) return;
  TraceRecord& r = call->record;
  if (!r.who.host_tgid) r.who = identity_at_exit(e);
  set_result(r, e.ret);
  r.latency_us = e.exit_ns > call->t0 ? double(e.exit_ns - call->t0) / 1e3 : 0.0;
  if (e.ret >= 0) {
    std::span<const uint8_t> r0(e.region0, e.len0), r1(e.region1, e.len1);
    switch (r.call.device_class) {
      case DeviceClass::kUverbs:
        decode_uverbs_result(r.call, r0, r1, r.out);
        break;
      case DeviceClass::kNvidiaFrontend:
      case DeviceClass::kNvidiaUvm:
        decode_nvidia_result(r.call, r0, r1, r.out);
        break;
      default:
        break;
    }
  }
  // A granted open of a watched kind returned an fd: remember its class for its writes.
  if (r.call.name == "open" && e.ret >= 0 &&
      (r.call.device_class == DeviceClass::kUverbs ||
       r.call.device_class == DeviceClass::kRdmaCm)) {
    // Bounded: past the cap (a tenant holding that many fds open) new fds go unwatched.
    if (watched_fds_.size() < kMaxWatchedFds)
      watched_fds_[{r.who.host_tgid, static_cast<uint32_t>(e.ret)}] =
          DeviceNode{.name = r.device, .device_class = r.call.device_class};
    else if (observer_)
      observer_->unwatch_cm_fd(r.who.host_tgid, static_cast<uint32_t>(e.ret));
  }
  emit(std::move(r));
  pending_.release(index);
}

void SessionTrace::sweep() {
  // A thread that died inside a call never produces an exit event. One that died just after its
  // call returned may have a result still waiting in the observer's ring (drained every few
  // milliseconds): a pending call is given up only when its thread was already gone at the
  // previous sweep.
  const std::vector<PendingResults::Waiting> waiting = pending_.waiting();
  std::set<pid_t> tids, gone;
  for (const PendingResults::Waiting& w : waiting) tids.insert(static_cast<pid_t>(w.tid));
  for (pid_t tid : tids) {
    if (alive(static_cast<uint32_t>(tid))) continue;
    if (!gone_at_last_sweep_.contains(tid)) {
      gone.insert(tid);
      continue;
    }
    for (const PendingResults::Waiting& w : waiting)
      if (w.tid == static_cast<uint32_t>(tid))
        write_without_result(w, "thread exited before the call returned");
    if (observer_) observer_->forget(static_cast<uint32_t>(tid));
  }
  gone_at_last_sweep_ = std::move(gone);
  give_up_unreported_results();
  unwatch_fds_of_gone_processes();
  if (json_) json_->flush();
}

// A record still waiting although its thread's registration is no longer armed: the exit
// happened. If its result is not in the ring either (drained since the previous sweep), the
// kernel skipped the observer's program at that exit, and it never comes: given up at the
// second sweep that finds it so, instead of waiting for the session's end (the thread lives on).
void SessionTrace::give_up_unreported_results() {
  if (!observer_) return;
  std::set<uint64_t> unreported;
  for (const PendingResults::Waiting& w : pending_.waiting()) {
    if (observer_->still_armed(w.tid, w.seq)) continue;
    if (!unreported_at_last_sweep_.contains(w.seq)) {
      unreported.insert(w.seq);
      continue;
    }
    if (write_without_result(
            w, "result not observed: the kernel did not run the observer at its return"))
      ++results_unobserved_;
  }
  unreported_at_last_sweep_ = std::move(unreported);
}

// A process's watched fds outlive it in the observer's map unless removed here: the map would
// fill (4096 entries, then new fds go unwatched in a long-running agent), and a process that
// later gets the same pid would have its writes copied for nothing.
void SessionTrace::unwatch_fds_of_gone_processes() {
  for (auto it = watched_fds_.begin(); it != watched_fds_.end();) {
    const uint32_t tgid = it->first.first;
    const bool living = alive(tgid);
    for (; it != watched_fds_.end() && it->first.first == tgid;) {
      if (living) {
        ++it;
        continue;
      }
      if (observer_) observer_->unwatch_cm_fd(tgid, it->first.second);
      it = watched_fds_.erase(it);
      ++fds_unwatched_gone_;
    }
  }
}

bool SessionTrace::write_without_result(const PendingResults::Waiting& w, std::string note) {
  PendingResults::Call* c = pending_.claim(w.index, w.seq);
  if (!c) return false;
  c->record.note = std::move(note);
  emit(std::move(c->record));
  pending_.release(w.index);
  return true;
}

void SessionTrace::finish(const std::string& why) {
  for (const PendingResults::Waiting& w : pending_.waiting()) {
    if (observer_) observer_->forget(w.tid);
    if (write_without_result(w, why)) ++results_unobserved_;
  }
  if (observer_)
    for (const auto& [key, node] : watched_fds_) observer_->unwatch_cm_fd(key.first, key.second);
  watched_fds_.clear();
  if (json_) json_->finish(std::chrono::seconds(5));
}

}  // namespace gdrproxy::proxy
