// Result observation for calls the supervisor answered with CONTINUE. The kernel executes such a
// call in the caller after the notification is answered, so the supervisor never sees its
// result; an eBPF program on the syscalls:sys_exit_{ioctl,open,openat,openat2} tracepoints (and
// sys_{enter,exit}_write for the caller's rdma_cm fds, whose command writes are never trapped)
// does, for exactly the threads the supervisor registered. Chosen over ptrace because it needs no
// stop of the caller, composes with debuggers inside the sandbox, and costs an array and a hash
// lookup per ioctl/open exit elsewhere on the host; it runs only in trace mode (--trace /
// --trace-json). Registering a call is a store into the thread's mapped slot (exit_event.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "proxy/decode/decoded_call.h"
#include "proxy/observe/bpf_array_mapping.h"
#include "proxy/observe/exit_event.h"

struct bpf_object;
struct bpf_link;
struct ring_buffer;

namespace gdrproxy::proxy {

class ExitObserver {
 public:
  using Callback = std::function<void(const gdrproxy_exit_event&)>;

  // Loads and attaches the program; returns nullptr and sets `why` when the kernel or the
  // privileges do not allow it.
  static std::unique_ptr<ExitObserver> open(Callback cb, std::string& why);
  ~ExitObserver();

  // Registers the next ioctl/open exit of `tid` as the result of trace record `seq`: in the
  // thread's mapped slot, a plain store (the hash map, a bpf() call, only when another thread
  // holds that slot). Its event carries `cookie` back, which tells the engine where it goes
  // (exit_event.h). Thread-safe.
  // `watch_rdma_cm`: the call is an open of rdma_cm whose new fd's writes are then observed.
  bool expect(uint32_t tid, uint64_t seq, uint64_t cookie, const ResultRegion& r0,
              const ResultRegion& r1, bool watch_rdma_cm = false);
  void forget(uint32_t tid);
  // Whether `tid`'s registration for record `seq` still waits for its exit (in its slot or the
  // map). False once the program took it, or a later registration of that thread replaced it:
  // a record still waiting then, after the ring was drained, lost its result (the kernel skipped
  // the program at that exit).
  bool still_armed(uint32_t tid, uint64_t seq) const;
  // Stop observing write()s on a caller's fd (closed, number reused).
  void unwatch_cm_fd(uint32_t tgid, uint32_t fd);
  int poll_fd() const;
  void consume();
  // Results the program could not report because the ring buffer was full.
  uint64_t lost() const;
  // Runs of the programs the kernel skipped (its recursion guard was held on that CPU), each a
  // result or a write never seen when the run was for a registered thread.
  uint64_t skipped() const;
  // Kernel ids of the links this observer owns (for diagnostics and for checking teardown).
  std::vector<uint32_t> link_ids() const;

 private:
  ExitObserver() = default;
  bpf_object* obj_ = nullptr;
  std::vector<bpf_link*> links_;  // owned: destroyed (detached) with the observer
  ring_buffer* rb_ = nullptr;
  int pending_fd_ = -1;
  // The mapped pending slots (exit_event.h): expect() arms one with no bpf() call.
  BpfArrayMapping mapping_;
  gdrproxy_pending_slot* slots_ = nullptr;  // mapping_'s
  gdrproxy_pending_slot& slot_of(uint32_t tid) const {
    return slots_[tid & (GDRPROXY_PENDING_SLOTS - 1)];
  }
  int cm_fds_fd_ = -1;
  int lost_fd_ = -1;
  Callback cb_;
};

}  // namespace gdrproxy::proxy
