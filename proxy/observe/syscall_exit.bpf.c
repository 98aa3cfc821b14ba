// Observes the result of syscalls the supervisor let continue. The supervisor registers a
// pending entry for the thread (keyed by its tid in the supervisor's pid namespace) just before
// answering CONTINUE; when that thread's ioctl or open returns, this program reports the return
// value and copies the caller buffers where the kernel wrote the outputs. The supervisor writes a
// pending entry into a slot of an array both sides map (no bpf() call on its hot path), or into a
// hash map when another thread holds that slot. Threads without a pending entry cost one array
// and one hash lookup. Each report also says who the caller is (its ids in its own pid
// namespace, and comm), read in the caller's context, so the supervisor need not read /proc for a
// traced call. The BPF helper headers need the kernel types first.
// clang-format off
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
// clang-format on

#include "exit_event.h"
#include "task_files.bpf.h"
#include "task_ids.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, struct gdrproxy_pending);
} pending SEC(".maps");

// The same, written by the supervisor through its mapping with no bpf() call (see exit_event.h).
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(map_flags, BPF_F_MMAPABLE);
  __uint(max_entries, GDRPROXY_PENDING_SLOTS);
  __type(key, __u32);
  __type(value, struct gdrproxy_pending_slot);
} pending_slots SEC(".maps");

// rdma_cm fds (by tgid and fd) whose writes are observed; the supervisor fills it from the results
// of the caller's own opens of rdma_cm.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, struct gdrproxy_cm_fd);
  __type(value, __u8);
} cm_fds SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, GDRPROXY_RING_BYTES);
} events SEC(".maps");

// Results that found the ring buffer full: counted, so a lost result is reported, never silent.
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} lost SEC(".maps");

// Layout of syscalls:sys_exit_* (see /sys/kernel/tracing/events/syscalls/sys_exit_ioctl/format).
struct sys_exit_ctx {
  __u64 common;
  __s32 syscall_nr;
  __u32 pad;
  __s64 ret;
};

// `write_exit`: this is a write()'s exit. It takes only a watched write's entry, and the other
// exits only the supervisor's registrations: an entry whose own exit the kernel skipped (its
// recursion guard, seen in guests) must not complete the thread's next, other call.
static __always_inline int report(struct sys_exit_ctx* ctx, int write_exit) {
  __u32 tgid = 0;
  __u32 tid = caller_ids(&tgid);
  if (!tid) return 0;
  // The thread's slot first: taken (ARMED -> BUSY), copied, freed; else the hash map's entry.
  struct gdrproxy_pending taken;
  int in_hash = 0;
  __u32 idx = tid & (GDRPROXY_PENDING_SLOTS - 1);
  struct gdrproxy_pending_slot* slot = bpf_map_lookup_elem(&pending_slots, &idx);
  const __u64 armed = GDRPROXY_SLOT_STATE(tid, GDRPROXY_SLOT_ARMED);
  if (!write_exit && slot && slot->state == armed &&
      __sync_val_compare_and_swap(&slot->state, armed,
                                  GDRPROXY_SLOT_STATE(tid, GDRPROXY_SLOT_BUSY)) == armed) {
    __builtin_memcpy(&taken, &slot->p, sizeof(taken));
    __sync_lock_test_and_set(&slot->state, 0);
  } else {
    struct gdrproxy_pending* h = bpf_map_lookup_elem(&pending, &tid);
    if (!h || (h->kind == GDRPROXY_EVENT_CM_WRITE) != write_exit) return 0;
    __builtin_memcpy(&taken, h, sizeof(taken));
    in_hash = 1;
  }
  const struct gdrproxy_pending* p = &taken;
  if (p->kind == GDRPROXY_EVENT_CM_OPEN && ctx->ret >= 0) {
    struct gdrproxy_cm_fd key = {tgid, (__u32)ctx->ret};
    __u8 one = 1;
    bpf_map_update_elem(&cm_fds, &key, &one, BPF_ANY);
  }
  struct gdrproxy_exit_event* e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (e) {
    e->seq = p->seq;
    e->cookie = p->cookie;
    e->ret = ctx->ret;
    e->exit_ns = bpf_ktime_get_ns();
    e->tid = tid;
    e->kind = p->kind == GDRPROXY_EVENT_CM_WRITE ? GDRPROXY_EVENT_CM_WRITE : GDRPROXY_EVENT_RESULT;
    e->fd = p->fd;
    e->enter_ns = p->enter_ns;
    e->tgid = tgid;
    e->rdev = p->rdev;
    struct task_struct* task = (struct task_struct*)bpf_get_current_task();
    const __u32 level = task_pid_level(task);
    e->ns_tid = task_id_at_level(task, level, &e->pidns);
    e->ns_tgid = task_id_at_level(BPF_CORE_READ(task, group_leader), level, 0);
    bpf_get_current_comm(e->comm, sizeof(e->comm));
    __u32 n0 = p->len0;
    __u32 n1 = p->len1;
    if (n0 > GDRPROXY_REGION0_MAX) n0 = GDRPROXY_REGION0_MAX;
    if (n1 > GDRPROXY_REGION1_MAX) n1 = GDRPROXY_REGION1_MAX;
    e->len0 = 0;
    e->len1 = 0;
    // A failed call's outputs are never decoded (a write()'s command always is): not copied.
    // Such a buffer may also never have been touched, and reading a page that is not there
    // fails through the fault path, about a microsecond each.
    if (ctx->ret < 0 && e->kind != GDRPROXY_EVENT_CM_WRITE) n0 = n1 = 0;
    if (n0 && bpf_probe_read_user(e->region0, n0, (const void*)p->addr0) == 0) e->len0 = n0;
    if (n1 && bpf_probe_read_user(e->region1, n1, (const void*)p->addr1) == 0) e->len1 = n1;
    // No wake-up per result: the supervisor drains the ring on a short timer, so the caller's
    // return does not wake its loop on every call. A ring an eighth full wakes it at once.
    const __u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
    bpf_ringbuf_submit(e,
                       avail > GDRPROXY_RING_WAKE_BYTES ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
  } else {
    __u32 zero = 0;
    __u64* n = bpf_map_lookup_elem(&lost, &zero);
    if (n) __sync_fetch_and_add(n, 1);
  }
  if (in_hash) bpf_map_delete_elem(&pending, &tid);
  return 0;
}

// task_ids.bpf.h declares task_struct with its own fields; this flavour adds the one read here.
struct task_struct___files {
  struct files_struct* files;
} __attribute__((preserve_access_index));

// The device of the file the current task's fd `fd` names now; 0 when it names none, or no device.
static __always_inline __u32 rdev_of_fd(__u64 fd) {
  struct task_struct___files* task = (void*)bpf_get_current_task();
  struct fdtable* fdt = BPF_CORE_READ(task, files, fdt);
  if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds)) return 0;
  struct file** fds = BPF_CORE_READ(fdt, fd);
  struct file* f = 0;
  if (!fds || bpf_probe_read_kernel(&f, sizeof(f), fds + fd) != 0 || !f) return 0;
  return BPF_CORE_READ(f, f_inode, i_rdev);
}

// Layout of syscalls:sys_enter_write.
struct sys_enter_write_ctx {
  __u64 common;
  __s32 syscall_nr;
  __u32 pad;
  __u64 fd;
  __u64 buf;
  __u64 count;
};

// rdma_cm commands are write()s the kernel accepts only on the caller's own fd, so they are never
// trapped; a write on a watched rdma_cm fd is observed here and reported at its exit.
SEC("tracepoint/syscalls/sys_enter_write")
int on_enter_write(struct sys_enter_write_ctx* ctx) {
  __u32 tgid = 0;
  __u32 tid = caller_ids(&tgid);
  if (!tid) return 0;
  struct gdrproxy_cm_fd key = {tgid, (__u32)ctx->fd};
  if (!bpf_map_lookup_elem(&cm_fds, &key)) {
    // Not watched. An entry of this thread's from a watched write whose exit the kernel skipped
    // would be taken at this write's exit, and reported with this write's result: dropped.
    const struct gdrproxy_pending* stale = bpf_map_lookup_elem(&pending, &tid);
    if (stale && stale->kind == GDRPROXY_EVENT_CM_WRITE) bpf_map_delete_elem(&pending, &tid);
    return 0;
  }
  struct gdrproxy_pending p = {};
  p.addr0 = ctx->buf;
  p.len0 = ctx->count > GDRPROXY_REGION0_MAX ? GDRPROXY_REGION0_MAX : (__u32)ctx->count;
  p.kind = GDRPROXY_EVENT_CM_WRITE;
  p.fd = (__u32)ctx->fd;
  p.enter_ns = bpf_ktime_get_ns();
  p.rdev = rdev_of_fd(ctx->fd);
  bpf_map_update_elem(&pending, &tid, &p, BPF_ANY);
  return 0;
}

SEC("tracepoint/syscalls/sys_exit_write")
int on_exit_write(struct sys_exit_ctx* ctx) {
  return report(ctx, 1);
}

SEC("tracepoint/syscalls/sys_exit_ioctl")
int on_exit_ioctl(struct sys_exit_ctx* ctx) {
  return report(ctx, 0);
}

// Opens the caller performs itself (granted uverbs/rdma_cm nodes): the result is the new fd.
SEC("tracepoint/syscalls/sys_exit_openat")
int on_exit_openat(struct sys_exit_ctx* ctx) {
  return report(ctx, 0);
}

SEC("tracepoint/syscalls/sys_exit_open")
int on_exit_open(struct sys_exit_ctx* ctx) {
  return report(ctx, 0);
}

SEC("tracepoint/syscalls/sys_exit_openat2")
int on_exit_openat2(struct sys_exit_ctx* ctx) {
  return report(ctx, 0);
}
