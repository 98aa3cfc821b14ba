// One slot of the trap-copy map, shared by the BPF program (trap_copy.bpf.c) that fills it in a
// trapped caller's own context and the supervisor (trap_copy.cc) that reads it through mmap.
//
// The idea not to miss: a slot is a seqlock. The writer moves `seq` from even to odd (compare and
// swap, so two writers never interleave), writes, and moves it on to even; a reader takes the
// slot only if `seq` was the same even value before and after its copy, and only for the
// notification whose id, caller and (fd, request, argument) it names.
#pragma once

#ifdef __cplusplus
#include <cstdint>
using gdrproxy_u32 = std::uint32_t;
using gdrproxy_u64 = std::uint64_t;
#else
typedef __u32 gdrproxy_u32;
typedef __u64 gdrproxy_u64;
#endif

// Slots in the map (a power of two): a caller's slot is its tid (as the supervisor's pid
// namespace names it) modulo this. A thread has at most one notification pending, and the same
// slot for all its calls stays in the caches of the CPUs that write and read it (slots by
// notification id walked the whole 1.2 MB map, a cold slot every call). Two threads whose tids
// are equal modulo this, trapped at the same moment, can overwrite each other's copy: the other
// notification then misses and is looked up as without copies.
#define GDRPROXY_TRAP_COPY_SLOTS 2048
// Bytes of the argument copied at most: to the end of its page, never further. Fewer where the
// call names its argument's size: the request's size field (_IOC_SIZE: an NVIDIA frontend
// call's parameters), or for the uverbs ioctl the first field of its header (the header and its
// attributes); what a decoder reads beyond the copy it reads from the caller.
#define GDRPROXY_TRAP_COPY_BYTES 512
// RDMA_VERBS_IOCTL (proxy/abi/uverbs_abi.h's kVerbsIoctl, checked there by trap_copy.cc).
#define GDRPROXY_TRAP_COPY_VERBS_IOCTL 0xc0181b01u

// `flags` bits.
#define GDRPROXY_TRAP_COPY_FD_READ 1u  // the caller's fd table was read: FILE says what fd names
#define GDRPROXY_TRAP_COPY_FILE 2u     // the fd named an open file: `mode`, `rdev` its inode's
#define GDRPROXY_TRAP_COPY_DATA 4u     // `len` bytes at `arg` were copied into `data`

struct gdrproxy_trap_copy {
  gdrproxy_u64 seq;  // seqlock: odd while being written (64 bits: BPF's atomics)
  gdrproxy_u64 id;   // the seccomp notification's id
  gdrproxy_u32 tid;  // the caller, as the supervisor's pid namespace names it
  gdrproxy_u32 flags;
  gdrproxy_u64 fd;  // the call's arguments 0..2, as the filter saw them
  gdrproxy_u64 request;
  gdrproxy_u64 arg;
  gdrproxy_u32 mode;  // the file's inode mode
  gdrproxy_u32 rdev;  // the kernel's encoding: major << 20 | minor
  gdrproxy_u32 len;
  gdrproxy_u32 pad;
  unsigned char data[GDRPROXY_TRAP_COPY_BYTES];
};
