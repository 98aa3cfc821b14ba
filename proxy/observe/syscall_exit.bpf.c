// Observes the result of syscalls the supervisor let continue. The supervisor registers a
// pending entry for the thread (keyed by host tid) just before answering CONTINUE; when that
// thread's ioctl/write returns, this program reports the return value and copies the caller
// buffers where the kernel wrote the outputs. Threads without a pending entry cost one hash
// lookup.
// The BPF helper headers need the kernel types first.
// clang-format off
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
// clang-format on

#include "exit_event.h"

char LICENSE[] SEC("license") = "GPL";

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, struct gdrproxy_pending);
} pending SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 22);
} events SEC(".maps");

// Layout of syscalls:sys_exit_* (see /sys/kernel/tracing/events/syscalls/sys_exit_ioctl/format).
struct sys_exit_ctx {
  __u64 common;
  __s32 syscall_nr;
  __u32 pad;
  __s64 ret;
};

static __always_inline int report(struct sys_exit_ctx* ctx) {
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct gdrproxy_pending* p = bpf_map_lookup_elem(&pending, &tid);
  if (!p) return 0;
  struct gdrproxy_exit_event* e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
  if (e) {
    e->seq = p->seq;
    e->ret = ctx->ret;
    e->exit_ns = bpf_ktime_get_ns();
    e->tid = tid;
    e->pad = 0;
    __u32 n0 = p->len0;
    __u32 n1 = p->len1;
    if (n0 > GDRPROXY_REGION0_MAX) n0 = GDRPROXY_REGION0_MAX;
    if (n1 > GDRPROXY_REGION1_MAX) n1 = GDRPROXY_REGION1_MAX;
    e->len0 = 0;
    e->len1 = 0;
    if (n0 && bpf_probe_read_user(e->region0, n0, (const void*)p->addr0) == 0) e->len0 = n0;
    if (n1 && bpf_probe_read_user(e->region1, n1, (const void*)p->addr1) == 0) e->len1 = n1;
    bpf_ringbuf_submit(e, 0);
  }
  bpf_map_delete_elem(&pending, &tid);
  return 0;
}

SEC("tracepoint/syscalls/sys_exit_ioctl")
int on_exit_ioctl(struct sys_exit_ctx* ctx) {
  return report(ctx);
}

SEC("tracepoint/syscalls/sys_exit_write")
int on_exit_write(struct sys_exit_ctx* ctx) {
  return report(ctx);
}
