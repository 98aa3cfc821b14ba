// Evaluation of enforcing device-ioctl decisions in the kernel with a BPF LSM program on the
// file_ioctl hook, instead of trapping the call to a seccomp supervisor. The idea not to miss:
// unlike a seccomp filter, the hook sees the file, so the decision is keyed by (device number,
// request) and a request allowed on one device says nothing about another; and it runs inside
// the caller's own syscall, with no round trip. Only processes listed in `sandboxed` are judged.
// clang-format off
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
// clang-format on

char LICENSE[] SEC("license") = "GPL";

// Just the fields read, relocated against the running kernel's BTF (CO-RE): no vmlinux.h.
struct inode {
  __u32 i_rdev;  // dev_t: the kernel's internal encoding, (major << 20) | minor
} __attribute__((preserve_access_index));
struct file {
  struct inode* f_inode;
} __attribute__((preserve_access_index));

struct call_key {
  __u32 rdev;
  __u32 cmd;
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u32);  // tgid
  __type(value, __u8);
} sandboxed SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 256);
  __type(key, __u32);  // rdev of a policed device
  __type(value, __u8);
} policed SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 65536);
  __type(key, struct call_key);
  __type(value, __u8);
} allowed SEC(".maps");

SEC("lsm/file_ioctl")
int BPF_PROG(police_ioctl, struct file* file, unsigned int cmd, unsigned long arg) {
  __u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
  if (!bpf_map_lookup_elem(&sandboxed, &tgid)) return 0;
  struct call_key k = {BPF_CORE_READ(file, f_inode, i_rdev), cmd};
  if (!bpf_map_lookup_elem(&policed, &k.rdev)) return 0;
  return bpf_map_lookup_elem(&allowed, &k) ? 0 : -1;  // -EPERM
}
