// Device-ioctl judgement inside the caller's own syscall (gdrproxy run --lsm, gdrproxy agent
// --lsm): a BPF LSM program on the file_ioctl hook, for the tasks of the sandboxes it judges. The
// idea not to miss: a seccomp filter sees only the request number, so a request it lets run
// untrapped runs on every fd; this hook sees the file, so it can refuse that request on a device
// the sandbox was not granted, and refuse every ioctl on such a device. Calls the filter still
// traps were judged by the supervisor before they reach this hook, so the hook refuses only:
//  - any ioctl on a node of a guarded driver that is not granted (or an unknown minor of one);
//  - a request the filter lets run untrapped (`untrapped`) on a granted node that the policy does
//    not allow it on (`allowed` holds the (node, request) pairs it does).
// Each refusal is reported through a ring (ioctl_lsm_event.h), after the fact: the supervisor
// says it in one line naming the device, the request and the caller.
// One program judges any number of sandboxes ("scopes"), each with tables of its own (keyed by
// its scope number). Which scope a task is judged in:
//  - a task marked from user space (by pidfd, `gdrproxy run`) before it runs the command, and
//    every task it and its descendants create afterwards (task_alloc copies the mark, for
//    threads, processes and io_uring workers alike);
//  - otherwise a task in a judged cgroup v2 (`gdrproxy agent`: a container's), or below it, the
//    outermost such cgroup deciding: a cgroup covers the tasks already in it and every one that
//    joins it later (`runc exec`), which a mark copied on fork cannot.
// No task of a sandbox escapes judgement by forking, nesting namespaces or changing
// credentials; every other task on the host is not judged, and an ioctl on no guarded node
// leaves the hook after one lookup.
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

enum counter { kAllowed = 0, kRefused = 1, kUnreported = 2, kCounters = 3 };

// The levels of the cgroup hierarchy a judged cgroup is at, one bit each (so a task's ancestors
// are looked up only at those levels).
#define MAX_CGROUP_LEVEL 32

struct scope_node {
  __u32 scope;
  __u32 rdev;
};
struct scope_request {
  __u32 scope;
  __u32 request;
};
struct scope_node_request {
  __u32 scope;
  __u32 rdev;
  __u32 request;
};

// Marked tasks: their scope.
struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, __u32);
} sandboxed SEC(".maps");

// Judged cgroups (by cgroup v2 id): their scope, and their level (for whoever takes the pinned
// maps over).
struct judged_cgroup {
  __u32 scope;
  __u32 level;
};
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u64);
  __type(value, struct judged_cgroup);
} judged_cgroups SEC(".maps");

// Bit L set: some judged cgroup is at level L (0: the root).
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} cgroup_levels SEC(".maps");

// Every node of a guarded driver (and each misc minor of one), whoever is judged.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32);
  __type(value, __u8);
} guarded_nodes SEC(".maps");

// Majors of guarded drivers (not misc): a minor no node here carries is refused.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 64);
  __type(key, __u32);
  __type(value, __u8);
} guarded_majors SEC(".maps");

// (scope, node) pairs: the nodes each scope was granted.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, 65536);
  __type(key, struct scope_node);
  __type(value, __u8);
} granted SEC(".maps");

// (scope, request): the requests its seccomp filter lets run untrapped, which only this program
// judges.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, 65536);
  __type(key, struct scope_request);
  __type(value, __u8);
} untrapped SEC(".maps");

// (scope, granted node, untrapped request) triples the policy allows.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, 1048576);
  __type(key, struct scope_node_request);
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

static __always_inline void report(__u32 scope, __u32 rdev, __u32 request, __u32 why) {
  struct gdrproxy_lsm_refusal* r = bpf_ringbuf_reserve(&refusals, sizeof(*r), 0);
  if (!r) {
    count(kUnreported);
    return;
  }
  struct task_struct* task = bpf_get_current_task_btf();
  r->tid = caller_ids(&r->tgid);
  r->ns_tid = task_id_at_level(task, task_pid_level(task), 0);
  r->scope = scope;
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

// The scope the current task is judged in; 0 when none.
static __always_inline __u32 scope_of_current(void) {
  __u32* marked = bpf_task_storage_get(&sandboxed, bpf_get_current_task_btf(), 0, 0);
  if (marked) return *marked;
  __u32 zero = 0;
  __u64* levels = bpf_map_lookup_elem(&cgroup_levels, &zero);
  if (!levels || !*levels) return 0;
  const __u64 mask = *levels;
  for (int level = 0; level < MAX_CGROUP_LEVEL; ++level) {
    if (!(mask & (1ULL << level))) continue;
    __u64 id = bpf_get_current_ancestor_cgroup_id(level);
    if (!id) break;  // the task's own cgroup is shallower
    struct judged_cgroup* judged = bpf_map_lookup_elem(&judged_cgroups, &id);
    if (judged) return judged->scope;
  }
  return 0;
}

SEC("lsm/task_alloc")
int BPF_PROG(mark_new_task, struct task_struct* task, unsigned long clone_flags) {
  __u32* scope = bpf_task_storage_get(&sandboxed, bpf_get_current_task_btf(), 0, 0);
  if (!scope) return 0;
  __u32 copy = *scope;
  // A mark that cannot be stored (out of memory) fails the fork: no unjudged task is created.
  return bpf_task_storage_get(&sandboxed, task, &copy, BPF_LOCAL_STORAGE_GET_F_CREATE) ? 0 : -EPERM;
}

SEC("lsm/file_ioctl")
int BPF_PROG(judge_ioctl, struct file* file, unsigned int cmd, unsigned long arg) {
  const __u32 rdev = BPF_CORE_READ(file, f_inode, i_rdev);
  if (rdev == 0) return 0;
  __u32 why = GDRPROXY_LSM_UNGRANTED;
  if (!bpf_map_lookup_elem(&guarded_nodes, &rdev)) {
    __u32 major = KDEV_MAJOR(rdev);
    if (!bpf_map_lookup_elem(&guarded_majors, &major)) return 0;
    why = GDRPROXY_LSM_UNKNOWN_MINOR;
  }
  const __u32 scope = scope_of_current();
  if (!scope) return 0;
  if (why == GDRPROXY_LSM_UNGRANTED) {
    struct scope_node node = {scope, rdev};
    if (bpf_map_lookup_elem(&granted, &node)) {
      struct scope_request untrapped_request = {scope, cmd};
      if (!bpf_map_lookup_elem(&untrapped, &untrapped_request)) return 0;  // the supervisor's
      struct scope_node_request pair = {scope, rdev, cmd};
      if (bpf_map_lookup_elem(&allowed, &pair)) {
        count(kAllowed);
        return 0;
      }
      why = GDRPROXY_LSM_NOT_HERE;
    }
  }
  count(kRefused);
  report(scope, rdev, cmd, why);
  return -EPERM;
}
