// Shared between the BPF program and the supervisor: what the supervisor asks to capture for a
// thread's pending syscall, and what the program reports when that syscall returns.
#pragma once

#ifdef __bpf__
typedef __u32 gp_u32;
typedef __u64 gp_u64;
typedef __s64 gp_s64;
#else
#include <cstdint>
typedef uint32_t gp_u32;
typedef uint64_t gp_u64;
typedef int64_t gp_s64;
#endif

#define GDRPROXY_REGION0_MAX 512
#define GDRPROXY_REGION1_MAX 256

// The ring of results, and the fill level at which a result wakes the supervisor at once (below
// it results wait for the supervisor's periodic drain, see Engine).
#define GDRPROXY_RING_BYTES (1 << 22)
#define GDRPROXY_RING_WAKE_BYTES (GDRPROXY_RING_BYTES / 8)

// Kinds of exit events.
#define GDRPROXY_EVENT_RESULT 0    // the result of a call the supervisor registered
#define GDRPROXY_EVENT_CM_WRITE 1  // a write() on a watched rdma_cm fd (never trapped)
// A registered open of rdma_cm: at its exit the program itself starts watching the new fd, before
// the caller can write to it.
#define GDRPROXY_EVENT_CM_OPEN 2

struct gdrproxy_pending {
  gp_u64 seq;  // the trace record waiting for this result (0 for rdma_cm writes)
  // Where the supervisor delivers the result, returned as is: its session (high half) and that
  // session's entry for the waiting record (low half). 0 for rdma_cm writes.
  gp_u64 cookie;
  gp_u64 addr0;  // caller memory to copy at exit
  gp_u64 addr1;
  gp_u32 len0;
  gp_u32 len1;
  gp_u32 kind;  // GDRPROXY_EVENT_*
  gp_u32 fd;    // rdma_cm writes: the fd written to
  gp_u64 enter_ns;
  gp_u32 rdev;  // watched writes: the written file's device (kernel encoding), read at entry
  gp_u32 pad;
};

// Where the supervisor registers a pending call without a bpf() call: an array both sides map,
// one slot per tid % GDRPROXY_PENDING_SLOTS. A slot's state is 0 (free) or the owning tid in the
// high half and ARMED or BUSY in the low half; whoever moves it to BUSY (compare-and-swap) alone
// touches `p` until it leaves BUSY. The supervisor arms a slot that is free or already its
// thread's; the program takes an ARMED slot of the exiting thread and frees it. A thread whose
// slot another thread holds is registered in the hash map `pending` instead.
#define GDRPROXY_PENDING_SLOTS 4096
#define GDRPROXY_SLOT_ARMED 1
#define GDRPROXY_SLOT_BUSY 2
#define GDRPROXY_SLOT_STATE(tid, st) ((((gp_u64)(tid)) << 32) | (gp_u64)(st))

struct gdrproxy_pending_slot {
  gp_u64 state;
  struct gdrproxy_pending p;
};

// A caller's rdma_cm fd whose writes are observed (key of the cm_fds map).
struct gdrproxy_cm_fd {
  gp_u32 tgid;
  gp_u32 fd;
};

struct gdrproxy_exit_event {
  gp_u64 seq;
  gp_u64 cookie;  // the registration's (gdrproxy_pending)
  gp_s64 ret;
  gp_u64 exit_ns;   // CLOCK_MONOTONIC
  gp_u64 enter_ns;  // rdma_cm writes: when the write entered the kernel
  gp_u32 tid;
  gp_u32 len0;  // bytes actually captured (0 when the copy faulted)
  gp_u32 len1;
  gp_u32 kind;  // GDRPROXY_EVENT_*
  gp_u32 fd;    // rdma_cm writes: the fd written to
  gp_u32 tgid;  // the caller's process (routes a write to the session watching it)
  // Who the caller is, read in its own context at the exit (the record's identity, so the
  // supervisor reads nothing from /proc for it): its ids in its own pid namespace, that
  // namespace's inode number, and its comm.
  gp_u32 ns_tid;
  gp_u32 ns_tgid;
  gp_u32 pidns;
  // Watched writes: the device of the file the fd named when the write entered the kernel (the
  // kernel's encoding, major << 20 | minor; 0: not a device, or not read). The supervisor names
  // the write by it, so a write whose fd was closed or reused before the event is read is still
  // named by what it wrote to.
  gp_u32 rdev;
  char comm[16];
  unsigned char region0[GDRPROXY_REGION0_MAX];
  unsigned char region1[GDRPROXY_REGION1_MAX];
};
