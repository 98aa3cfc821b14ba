// A session's trace: its sinks (text lines on stderr, the JSON file's writer thread), the records
// of traced calls waiting for their result, and the rdma_cm and uverbs fds whose write()s the
// observer watches. The idea not to miss: a traced call let run is registered with the engine's
// one observer before it runs, and its record waits in an entry whose index rides in the
// registration's cookie, so its result finds it with no lookup and a stale result is told by its
// sequence number; what never gets a result (a thread that died in its call, an exit the kernel
// did not report) is written without one within two sweeps, saying why. Records waiting for a
// result are the loop's and the receivers' without the session's mutex (PendingResults has its
// own lock); the rest is touched under the session's mutex or on its loop, as the session says.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "proxy/devices/device_catalog.h"
#include "proxy/engine/call_handler.h"
#include "proxy/engine/call_inputs.h"
#include "proxy/engine/pending_results.h"
#include "proxy/engine/session_stats.h"
#include "proxy/observe/exit_event.h"
#include "proxy/observe/exit_observer.h"
#include "proxy/trace/json_trace_writer.h"
#include "proxy/trace/trace_record.h"

namespace gdrproxy::proxy {

class SessionTrace {
 public:
  // `observer` completes traced calls at their exit (nullptr: results are not shown); `json`
  // is the JSON file's writer (nullptr: none). The callers' identities and fds are asked of
  // `callers` and `files`, observed writes judged by `handler`.
  SessionTrace(bool text, std::unique_ptr<JsonTraceWriter> json, ExitObserver* observer,
               Callers& callers, CallerFiles& files, CallHandler& handler, std::string log_prefix,
               std::function<uint64_t()> next_seq);

  bool tracing() const { return text_ || json_ != nullptr; }
  ExitObserver* observer() const { return observer_; }
  // The high half of each registration's cookie: the session's id (Engine::attach).
  void set_session_id(uint32_t id) { id_ = id; }

  // Writes a completed record to the sinks (the JSON file's by its writer thread).
  void emit(TraceRecord&& r);
  // A traced call about to be let run: registered with the observer, its record `r` (moved)
  // then waits for the call's result. The entry's index, or nullopt when the call is not
  // observed (no observer, or its registration refused): then answered() writes `r` at once.
  std::optional<uint32_t> await(TraceRecord& r, pid_t tid, uint64_t t0, bool watch_writes);
  // After the answer: a waiting call that never ran (`ran` false: its caller is gone) is written
  // with its tid alone; an unobserved one is written now, result unknown.
  void answered(std::optional<uint32_t> index, uint64_t seq, TraceRecord& r, pid_t tid, bool ran);
  // An exit event of a call this session registered (results are the loop's, without the
  // session's mutex), or a watched write (under it).
  void on_result(const gdrproxy_exit_event& e);
  void on_write(const gdrproxy_exit_event& e);
  // Each second, on the loop under the session's mutex: gives up the records of threads that
  // died in their call and of exits the kernel did not report, unwatches the fds of processes
  // that are gone, flushes the JSON file.
  void sweep();
  // Writes what still waits (`why` says why it has no result), unwatches every fd, and finishes
  // the JSON file (bounded: a file that no longer takes bytes does not hold the exit).
  void finish(const std::string& why);

  // Its counters and the observer's, into a session's stats.
  void add_counts(SessionStats& s) const;
  // Records the JSON file did not take in time.
  uint64_t dropped() const { return json_ ? json_->dropped() : 0; }
  uint64_t json_bytes() const { return json_ ? json_->written_bytes() : 0; }

 private:
  uint64_t cookie_of(uint32_t index) const { return (uint64_t{id_} << 32) | index; }
  // Writes waiting record `w` without its result, its note saying why; frees the entry. False
  // if its result claimed it first.
  bool write_without_result(const PendingResults::Waiting& w, std::string note);
  void give_up_unreported_results();
  void unwatch_fds_of_gone_processes();

  const bool text_;
  const std::unique_ptr<JsonTraceWriter> json_;
  ExitObserver* const observer_;
  Callers& callers_;
  CallerFiles& files_;
  CallHandler& handler_;
  const std::string log_prefix_;
  const std::function<uint64_t()> next_seq_;
  uint32_t id_ = 0;
  PendingResults pending_;
  std::set<pid_t> gone_at_last_sweep_;           // tids with a pending result that had exited then
  std::set<uint64_t> unreported_at_last_sweep_;  // seqs of waiting records found unarmed then
  // Fds whose writes the observer watches, with the node their open named (its name and class),
  // recorded when the open returned: a write read after its fd is gone is still named by it.
  // The loop's (results, the sweep, stats).
  std::map<std::pair<uint32_t, uint32_t>, DeviceNode> watched_fds_;
  static constexpr size_t kMaxWatchedFds = 65536;
  uint64_t results_unobserved_ = 0, fds_unwatched_gone_ = 0;
};

// The caller as the observer saw it at its syscall's exit, in its own context. Its "host" ids are
// the supervisor's pid namespace's, as the observer reports them.
ProcessIdentity identity_at_exit(const gdrproxy_exit_event& e);

}  // namespace gdrproxy::proxy
