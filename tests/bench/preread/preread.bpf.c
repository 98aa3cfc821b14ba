// Evaluation of a supervisor that does not look up a trapped ioctl's fd or read its argument
// itself (`ioctl_bench raw-pre`, tests/bench/ioctl_bench.cc): this program runs at the entry of the
// seccomp filter (fentry on __seccomp_filter), in the caller's context, before the notification,
// and copies what the supervisor would otherwise fetch with two syscalls per call (a statx of
// /proc/<tid>/fd/<n>, a process_vm_readv): the fd's device number and mode, and up to 512 bytes
// of the argument (to the end of its page). The idea not to miss: the supervisor then makes one
// map lookup instead, keyed by the caller's tid, and checks that the entry is this call's (fd,
// request, argument) before using it.
// Evaluation only: the engine does not use it (docs/PERFORMANCE.md says what an engine version
// would have to add: a staleness check, an LRU map, a per-sandbox watch, kernels without the hook).
// clang-format off
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
// clang-format on

#include "proxy/observe/task_files.bpf.h"

char LICENSE[] SEC("license") = "GPL";

// Just the fields read, relocated against the running kernel's BTF (CO-RE); the fd table's types
// are the engine's (task_files.bpf.h).
struct pt_regs {
  unsigned long di, si, dx, orig_ax;
} __attribute__((preserve_access_index));
struct task_struct {
  struct files_struct* files;
} __attribute__((preserve_access_index));

#define NR_IOCTL 16  // x86-64
#define COPY_MAX 512

struct preread_entry {
  __u64 request, arg;
  __u32 fd, rdev, mode, len;
  unsigned char data[COPY_MAX];
};

// The processes whose ioctls are copied (tgid -> 1).
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u32);
  __type(value, __u8);
} watched SEC(".maps");

// The last ioctl of each watched thread (tid -> entry).
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, struct preread_entry);
} preread SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct preread_entry);
} scratch SEC(".maps");

SEC("fentry/__seccomp_filter")
int BPF_PROG(copy_ioctl) {
  struct task_struct* task = bpf_get_current_task_btf();
  struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs((void*)task);
  if (BPF_CORE_READ(regs, orig_ax) != NR_IOCTL) return 0;
  const __u64 id = bpf_get_current_pid_tgid();
  const __u32 tgid = id >> 32, tid = (__u32)id, zero = 0;
  if (!bpf_map_lookup_elem(&watched, &tgid)) return 0;
  struct preread_entry* e = bpf_map_lookup_elem(&scratch, &zero);
  if (!e) return 0;
  e->fd = BPF_CORE_READ(regs, di);
  e->request = BPF_CORE_READ(regs, si);
  e->arg = BPF_CORE_READ(regs, dx);
  e->rdev = e->mode = e->len = 0;
  struct fdtable* fdt = BPF_CORE_READ(task, files, fdt);
  if (fdt && e->fd < BPF_CORE_READ(fdt, max_fds)) {
    struct file** fds = BPF_CORE_READ(fdt, fd);
    struct file* f = 0;
    bpf_probe_read_kernel(&f, sizeof f, fds + e->fd);
    if (f) {
      e->rdev = BPF_CORE_READ(f, f_inode, i_rdev);
      e->mode = BPF_CORE_READ(f, f_inode, i_mode);
    }
  }
  __u32 len = 4096 - (e->arg & 4095);
  if (len > COPY_MAX) len = COPY_MAX;
  if (bpf_probe_read_user(e->data, len & (2 * COPY_MAX - 1), (const void*)e->arg) == 0)
    e->len = len;
  bpf_map_update_elem(&preread, &tid, e, BPF_ANY);
  return 0;
}
