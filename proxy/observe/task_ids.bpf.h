// For BPF programs: a task's ids in one pid namespace of its chain (by depth or by the
// namespace's inode number), read from the running
// kernel's struct pid through CO-RE (its BTF), so that a program reports a caller as a given
// namespace sees it. The idea not to miss: struct pid holds one (nr, namespace) pair per level,
// from the initial namespace (0) down to the task's own (pid->level); the pair for a level the
// task is not visible in does not exist, and reads 0 here.
// Including programs also get the supervisor_pidns map (its loader writes the supervisor's pid
// namespace there) and caller_ids(), the current task's ids as the supervisor sees them.
// Include after the BPF helper headers (bpf_helpers.h, bpf_core_read.h).
#pragma once

struct ns_common {
  unsigned int inum;
} __attribute__((preserve_access_index));
struct pid_namespace {
  struct ns_common ns;
} __attribute__((preserve_access_index));
struct upid {
  int nr;
  struct pid_namespace* ns;
} __attribute__((preserve_access_index));
struct pid {
  unsigned int level;
  struct upid numbers[1];
} __attribute__((preserve_access_index));
struct task_struct {
  struct pid* thread_pid;
  struct task_struct* group_leader;
} __attribute__((preserve_access_index));

// The level of `task`'s own pid namespace (0: the initial one).
static __always_inline __u32 task_pid_level(struct task_struct* task) {
  return BPF_CORE_READ(task, thread_pid, level);
}

// The initial pid namespace's inode number (the kernel's PROC_PID_INIT_INO).
#define GDRPROXY_INIT_PIDNS_INUM 0xEFFFFFFCU

// `task`'s id in the pid namespace whose inode number is `inum`; 0 when the task is not visible
// there (that namespace is not in its chain, or lies deeper than 8 levels).
static __always_inline __u32 task_id_in_ns(struct task_struct* task, __u32 inum) {
  struct pid* p = BPF_CORE_READ(task, thread_pid);
  if (!p) return 0;
  const __u32 deepest = BPF_CORE_READ(p, level);
  const char* numbers = (const char*)p + bpf_core_field_offset(struct pid, numbers);
  for (__u32 level = 0; level < 8; ++level) {
    if (level > deepest) break;
    const char* at = numbers + level * bpf_core_type_size(struct upid);
    struct pid_namespace* ns = 0;
    bpf_probe_read_kernel(&ns, sizeof(ns), at + bpf_core_field_offset(struct upid, ns));
    if (!ns || BPF_CORE_READ(ns, ns.inum) != inum) continue;
    int nr = 0;
    bpf_probe_read_kernel(&nr, sizeof(nr), at + bpf_core_field_offset(struct upid, nr));
    return (__u32)nr;
  }
  return 0;
}

// `task`'s id at namespace depth `level`, and that namespace's inode number (/proc/PID/ns/pid) in
// *inum when inum is given; 0 (and *inum 0) when the task is not visible there.
static __always_inline __u32 task_id_at_level(struct task_struct* task, __u32 level, __u32* inum) {
  if (inum) *inum = 0;
  struct pid* p = BPF_CORE_READ(task, thread_pid);
  if (!p || level > 31 || BPF_CORE_READ(p, level) < level) return 0;
  const char* at = (const char*)p + bpf_core_field_offset(struct pid, numbers) +
                   level * bpf_core_type_size(struct upid);
  int nr = 0;
  bpf_probe_read_kernel(&nr, sizeof(nr), at + bpf_core_field_offset(struct upid, nr));
  if (inum) {
    struct pid_namespace* ns = 0;
    bpf_probe_read_kernel(&ns, sizeof(ns), at + bpf_core_field_offset(struct upid, ns));
    if (ns) *inum = BPF_CORE_READ(ns, ns.inum);
  }
  return (__u32)nr;
}

// The supervisor's pid namespace (its inode number, written by the loader before any program
// runs). The supervisor names threads by their ids there, the ids its notifications carry, so a
// program reports them by those: a supervisor in a nested namespace never matches a host task
// that merely has the same number. 0 (unset): no task matches.
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} supervisor_pidns SEC(".maps");

// The current task's tid, and its tgid in *tgid, as the supervisor sees them (0 when it cannot
// see the task). In the initial namespace that is the helper's answer; deeper, a few reads of
// struct pid.
static __always_inline __u32 caller_ids(__u32* tgid) {
  __u32 zero = 0;
  *tgid = 0;
  const __u32* ns = bpf_map_lookup_elem(&supervisor_pidns, &zero);
  if (!ns || *ns == 0) return 0;
  if (*ns == GDRPROXY_INIT_PIDNS_INUM) {
    const __u64 id = bpf_get_current_pid_tgid();
    *tgid = (__u32)(id >> 32);
    return (__u32)id;
  }
  struct task_struct* task = (struct task_struct*)bpf_get_current_task();
  *tgid = task_id_in_ns(BPF_CORE_READ(task, group_leader), *ns);
  return task_id_in_ns(task, *ns);
}
