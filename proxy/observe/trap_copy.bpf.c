// The trap copy: what the supervisor needs to judge a trapped ioctl, copied in the caller's own
// context while it waits for the answer, so that the supervisor does not ask for it with a statx
// of /proc/<tid>/fd/<n> and a process_vm_readv per call.
//
// The idea not to miss: the copy is taken at the caller's context switch (sched:sched_switch, a
// plain tracepoint), from the pending seccomp notification the kernel keeps for it, and labelled
// with that notification's id. A caller has at most one notification pending (one syscall at a
// time) and ids are never reused by a filter, so a slot labelled with the id the supervisor
// received was written during that very call: it is never an earlier call's copy. Anything the
// program cannot see or copy is left out, and the supervisor then looks it up itself as before.
// clang-format off
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
// clang-format on

#include "task_files.bpf.h"
#include "task_ids.bpf.h"
#include "trap_copy_slot.h"

char LICENSE[] SEC("license") = "GPL";

// ABI facts (x86-64 and arm64): the ioctl syscall's number under its audit architecture.
#define AUDIT_ARCH_X86_64 0xC000003EU
#define NR_IOCTL_X86_64 16
#define AUDIT_ARCH_AARCH64 0xC00000B7U
#define NR_IOCTL_AARCH64 29
#define SECCOMP_MODE_FILTER 2
#define S_IFMT 0170000
#define PAGE_BYTES 4096

// The kernel's own structures, just the fields read, relocated against its BTF (CO-RE). The
// seccomp ones are private to kernel/seccomp.c; their BTF describes them all the same.
struct list_head {
  struct list_head* next;
} __attribute__((preserve_access_index));
struct seccomp_data {
  int nr;
  __u32 arch;
  __u64 instruction_pointer;
  __u64 args[6];
};
enum notify_state {
  SECCOMP_NOTIFY_REPLIED = 2,
};
struct seccomp_knotif {
  struct task_struct* task;
  __u64 id;
  const struct seccomp_data* data;
  enum notify_state state;
  struct list_head list;
} __attribute__((preserve_access_index));
struct notification {
  struct list_head notifications;
} __attribute__((preserve_access_index));
struct seccomp_filter {
  struct seccomp_filter* prev;
  struct notification* notif;
} __attribute__((preserve_access_index));
struct seccomp {
  int mode;
  struct seccomp_filter* filter;
} __attribute__((preserve_access_index));
// task_ids.bpf.h declares task_struct with its own fields; this flavour adds the ones read here.
struct task_struct___trap {
  struct seccomp seccomp;
  struct files_struct* files;
} __attribute__((preserve_access_index));

// How far the walks go: filters stacked on a task, notifications pending on one filter.
#define MAX_FILTERS 8
#define MAX_PENDING 32
// How much of an inode's head is copied to read its mode and device number.
#define INODE_BYTES 128

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(map_flags, BPF_F_MMAPABLE);
  __uint(max_entries, GDRPROXY_TRAP_COPY_SLOTS);
  __type(key, __u32);
  __type(value, struct gdrproxy_trap_copy);
} copies SEC(".maps");

// A knotif's fields as one copy: reading them one by one costs a helper call each, and this
// program runs on the caller's every context switch.
#define KNOTIF_BYTES 128
struct knotif_view {
  __u64 addr;  // 0: none
  unsigned char bytes[KNOTIF_BYTES];
};

// The field at CO-RE offset `off` of a copied knotif (0 where it would lie beyond the copy).
static __always_inline __u64 knotif_u64(const struct knotif_view* v, __u32 off) {
  if (off > KNOTIF_BYTES - 8) return 0;
  return *(const __u64*)(v->bytes + off);
}

// The pending notification of `task` on one of its filters, copied into *v (v->addr 0: none).
// The task and its filters are read with plain loads (the tracepoint's task is a typed kernel
// pointer); a knotif is reached by address arithmetic, so it is copied out.
static __always_inline void pending_notification(struct task_struct___trap* task,
                                                 struct knotif_view* v) {
  v->addr = 0;
  const __u32 list_at = bpf_core_field_offset(struct seccomp_knotif, list.next);
  const __u32 task_at = bpf_core_field_offset(struct seccomp_knotif, task);
  if (list_at > KNOTIF_BYTES - 8 || task_at > KNOTIF_BYTES - 8) return;
  if (task->seccomp.mode != SECCOMP_MODE_FILTER) return;
  struct seccomp_filter* f = task->seccomp.filter;
  for (int i = 0; i < MAX_FILTERS && f; ++i) {
    struct notification* n = f->notif;
    if (n) {
      const __u64 head = (__u64)n + bpf_core_field_offset(struct notification, notifications);
      __u64 at = (__u64)n->notifications.next;
      for (int j = 0; j < MAX_PENDING && at && at != head; ++j) {
        const __u64 k = at - list_at;
        if (bpf_probe_read_kernel(v->bytes, list_at + 8, (void*)k) != 0) return;
        if (knotif_u64(v, task_at) == (__u64)task) {
          v->addr = k;
          return;
        }
        at = knotif_u64(v, list_at);  // list.next
      }
    }
    f = f->prev;
  }
}

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct knotif_view);
} scratch SEC(".maps");

SEC("tp_btf/sched_switch")
int BPF_PROG(copy_at_switch, _Bool preempt, struct task_struct___trap* prev) {
  // The task being switched out is the caller (and current).
  const __u32 zero = 0;
  struct knotif_view* v = bpf_map_lookup_elem(&scratch, &zero);
  if (!v) return 0;
  pending_notification(prev, v);
  if (!v->addr) return 0;
  const __u32 state_at = bpf_core_field_offset(struct seccomp_knotif, state);
  if (state_at > KNOTIF_BYTES - 4 || *(const int*)(v->bytes + state_at) == SECCOMP_NOTIFY_REPLIED)
    return 0;
  const __u64 id = knotif_u64(v, bpf_core_field_offset(struct seccomp_knotif, id));
  const struct seccomp_data* at =
      (const void*)knotif_u64(v, bpf_core_field_offset(struct seccomp_knotif, data));
  struct seccomp_data data;
  if (!at || bpf_probe_read_kernel(&data, sizeof data, at) != 0) return 0;
  if (!((data.arch == AUDIT_ARCH_X86_64 && data.nr == NR_IOCTL_X86_64) ||
        (data.arch == AUDIT_ARCH_AARCH64 && data.nr == NR_IOCTL_AARCH64)))
    return 0;
  __u32 tgid;
  const __u32 tid = caller_ids(&tgid);
  if (!tid) return 0;  // not visible to the supervisor
  // The caller's slot (trap_copy_slot.h says why by thread).
  const __u32 slot = tid & (GDRPROXY_TRAP_COPY_SLOTS - 1);
  struct gdrproxy_trap_copy* c = bpf_map_lookup_elem(&copies, &slot);
  if (!c) return 0;
  const __u64 seq = c->seq;
  if ((seq & 1) || __sync_val_compare_and_swap(&c->seq, seq, seq + 1) != seq) return 0;

  c->tid = tid;
  c->id = id;
  c->fd = data.args[0];
  c->request = data.args[1];
  c->arg = data.args[2];
  c->flags = 0;
  c->mode = 0;
  c->rdev = 0;
  c->len = 0;
  // The file behind the fd, from the caller's table as it is now. FD_READ only if every read
  // on the way succeeded: "no file" must mean the fd is closed, never that a read failed.
  const __u64 fd = data.args[0];
  struct fdtable* fdt = prev->files ? prev->files->fdt : 0;
  if (fdt) {
    if (fd >= fdt->max_fds) {
      c->flags |= GDRPROXY_TRAP_COPY_FD_READ;
    } else {
      struct file* file = 0;
      if (bpf_probe_read_kernel(&file, sizeof file, fdt->fd + fd) == 0) {
        struct inode* inode = 0;
        const __u32 mode_at = bpf_core_field_offset(struct inode, i_mode);
        const __u32 rdev_at = bpf_core_field_offset(struct inode, i_rdev);
        unsigned char head[INODE_BYTES];
        if (!file) {
          c->flags |= GDRPROXY_TRAP_COPY_FD_READ;
        } else if (mode_at <= INODE_BYTES - 2 && rdev_at <= INODE_BYTES - 4 &&
                   bpf_core_read(&inode, sizeof inode, &file->f_inode) == 0 && inode &&
                   bpf_probe_read_kernel(head, rdev_at + 4, inode) == 0) {
          // The inode's head in one copy: mode and device number lie within it.
          c->mode = *(const unsigned short*)(head + mode_at);
          c->rdev = *(const __u32*)(head + rdev_at);
          c->flags |= GDRPROXY_TRAP_COPY_FD_READ | GDRPROXY_TRAP_COPY_FILE;
        }
      }
    }
  }
  // The argument's first bytes, to the end of its page: a page the call does not touch is never
  // read, and reading across into one that is not resident would cost a fault's exception path
  // (about a microsecond) on every such call. Never a fault taken: a page that cannot be read
  // without one is left to the supervisor.
  // Only what the call names as its argument, where it names it (trap_copy_slot.h): the copy is
  // most of this program's cost, and a uverbs call's header and attributes are a fraction of
  // the most it would take.
  const __u64 arg = data.args[2];
  const __u32 request = (__u32)data.args[1];
  __u32 want = (request >> 16) & 0x3fff;  // _IOC_SIZE
  if (request == GDRPROXY_TRAP_COPY_VERBS_IOCTL) {
    __u16 total = 0;
    if (arg && bpf_probe_read_user(&total, sizeof total, (const void*)arg) == 0 && total > want)
      want = total;
  }
  if (want == 0) want = GDRPROXY_TRAP_COPY_BYTES;
  __u32 len = PAGE_BYTES - (__u32)(arg & (PAGE_BYTES - 1));
  if (len > want) len = want;
  if (len > GDRPROXY_TRAP_COPY_BYTES) len = GDRPROXY_TRAP_COPY_BYTES;
  if (arg && bpf_probe_read_user(c->data, len, (const void*)arg) == 0) {
    c->len = len;
    c->flags |= GDRPROXY_TRAP_COPY_DATA;
  }
  __sync_fetch_and_add(&c->seq, 1);
  return 0;
}
