// Device-ioctl judgement inside the caller's own syscall (gdrproxy run --lsm): a BPF LSM program
// on the file_ioctl hook, for the tasks of one sandbox. The idea not to miss: a seccomp filter
// sees only the request number, so a request it lets run untrapped runs on every fd; this hook
// sees the file, so it can refuse that request on a device the sandbox was not granted, and
// refuse every ioctl on such a device. Calls the filter still traps were judged by the
// supervisor before they reach this hook, so the hook refuses only:
//  - any ioctl on a node of a guarded driver that is not granted (or an unknown minor of one);
//  - a request the filter lets run untrapped (`untrapped`) on a granted node that the policy does
//    not allow it on (`allowed` holds the (node, request) pairs it does).
// Each refusal is reported through a ring (ioctl_lsm_event.h), after the fact: the supervisor
// says it in one line naming the device, the request and the caller.
// Which tasks are judged: one task marked from user space (by pidfd) before it runs the command,
// and every task it and its descendants create afterwards (task_alloc copies the mark, for
// threads, processes and io_uring workers alike), so no task of the sandbox escapes judgement by
// forking, nesting namespaces or changing credentials. Every other task on the host is not
// judged.
// clang-format off
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
// clang-format on

#include "../observe/task_ids.bpf.h"
#include "ioctl_lsm_event.h"

char LICENSE[] SEC("license") = "GPL";

// Just the fields read, relocated against the running kernel's BTF (CO-RE): no vmlinux.h.
struct inode {
  __u32 i_rdev;  // dev_t, the kernel's encoding: (major << 20) | minor
} __attribute__((preserve_access_index));
struct file {
  struct inode* f_inode;
} __attribute__((preserve_access_index));

#define KDEV_MAJOR(d) ((d) >> 20)
#define EPERM 1

enum node_verdict { kJudgeRequests = 1, kRefuseAll = 2 };
enum counter { kAllowed = 0, kRefused = 1, kUnreported = 2, kCounters = 3 };

struct node_request {
  __u32 rdev;
  __u32 request;
};

struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, __u8);
} sandboxed SEC(".maps");

// Nodes of guarded drivers that this sandbox's calls are judged on: rdev -> node_verdict.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32);
  __type(value, __u8);
} nodes SEC(".maps");

// Majors of guarded drivers (not misc): a minor no node here carries is refused.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 64);
  __type(key, __u32);
  __type(value, __u8);
} guarded_majors SEC(".maps");

// The requests the seccomp filter lets run untrapped: these only this program judges.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u32);
  __type(value, __u8);
} untrapped SEC(".maps");

// (granted node, untrapped request) pairs the policy allows.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 65536);
  __type(key, struct node_request);
  __type(value, __u8);
} allowed SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, kCounters);
  __type(key, __u32);
  __type(value, __u64);
} counters SEC(".maps");

// The refusals, for the supervisor to say (ioctl_lsm_event.h).
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, GDRPROXY_LSM_RING_BYTES);
} refusals SEC(".maps");

static __always_inline void count(__u32 which) {
  __u64* n = bpf_map_lookup_elem(&counters, &which);
  if (n) *n += 1;
}

static __always_inline void report(__u32 rdev, __u32 request, __u32 why) {
  struct gdrproxy_lsm_refusal* r = bpf_ringbuf_reserve(&refusals, sizeof(*r), 0);
  if (!r) {
    count(kUnreported);
    return;
  }
  struct task_struct* task = bpf_get_current_task_btf();
  r->tid = caller_ids(&r->tgid);
  r->ns_tid = task_id_at_level(task, task_pid_level(task), 0);
  r->rdev = rdev;
  r->request = request;
  r->why = why;
  bpf_get_current_comm(r->comm, sizeof(r->comm));
  // A tenant refused in a loop wakes the supervisor once per batch, not once per refusal: with
  // more than this record unread, the supervisor has been woken already (its periodic sweep
  // drains what a lost wake-up would leave).
  const __u64 footprint = (sizeof(*r) + 8 + 7) & ~7ULL;  // the record and its ring header
  bpf_ringbuf_submit(
      r, bpf_ringbuf_query(&refusals, BPF_RB_AVAIL_DATA) > footprint ? BPF_RB_NO_WAKEUP : 0);
}

SEC("lsm/task_alloc")
int BPF_PROG(mark_new_task, struct task_struct* task, unsigned long clone_flags) {
  if (!bpf_task_storage_get(&sandboxed, bpf_get_current_task_btf(), 0, 0)) return 0;
  __u8 one = 1;
  // A mark that cannot be stored (out of memory) fails the fork: no unjudged task is created.
  return bpf_task_storage_get(&sandboxed, task, &one, BPF_LOCAL_STORAGE_GET_F_CREATE) ? 0 : -EPERM;
}

SEC("lsm/file_ioctl")
int BPF_PROG(judge_ioctl, struct file* file, unsigned int cmd, unsigned long arg) {
  if (!bpf_task_storage_get(&sandboxed, bpf_get_current_task_btf(), 0, 0)) return 0;
  struct node_request key = {BPF_CORE_READ(file, f_inode, i_rdev), cmd};
  __u8* verdict = bpf_map_lookup_elem(&nodes, &key.rdev);
  __u32 why = GDRPROXY_LSM_UNGRANTED;
  if (!verdict) {
    __u32 major = KDEV_MAJOR(key.rdev);
    if (key.rdev == 0 || !bpf_map_lookup_elem(&guarded_majors, &major)) return 0;
    why = GDRPROXY_LSM_UNKNOWN_MINOR;
  } else if (*verdict == kJudgeRequests) {
    if (!bpf_map_lookup_elem(&untrapped, &key.request)) return 0;  // the supervisor judged it
    if (bpf_map_lookup_elem(&allowed, &key)) {
      count(kAllowed);
      return 0;
    }
    why = GDRPROXY_LSM_NOT_HERE;
  }
  count(kRefused);
  report(key.rdev, key.request, why);
  return -EPERM;
}
