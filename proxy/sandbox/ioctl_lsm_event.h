// Shared between the BPF LSM ioctl judge (ioctl_lsm.bpf.c) and the supervisor: what the judge
// reports for each ioctl it refuses, so that a refusal made in the kernel, which the supervisor
// never sees as a call, is still said in one line that names the device, the request and the
// caller. The report follows the refusal (the caller has its EPERM by then); it never delays it.
#pragma once

#ifdef __bpf__
typedef __u32 gpl_u32;
#else
#include <cstdint>
typedef uint32_t gpl_u32;
#endif

// The ring the refusals go through. When it is full a refusal is still made, only counted as
// unreported (counter kUnreported).
#define GDRPROXY_LSM_RING_BYTES (64 * 1024)

// Why the judge refused.
#define GDRPROXY_LSM_UNGRANTED 1      // a catalogued node the sandbox was not granted
#define GDRPROXY_LSM_UNKNOWN_MINOR 2  // a minor of a guarded driver that no catalogued node has
#define GDRPROXY_LSM_NOT_HERE 3       // an untrapped request on a granted node it is not allowed on

struct gdrproxy_lsm_refusal {
  gpl_u32 tid;     // in the supervisor's pid namespace (0 when the caller is not visible there)
  gpl_u32 tgid;    // likewise
  gpl_u32 ns_tid;  // in the caller's own pid namespace (the sandbox's view)
  gpl_u32 rdev;    // the kernel's encoding: (major << 20) | minor
  gpl_u32 request;
  gpl_u32 why;    // GDRPROXY_LSM_*
  gpl_u32 scope;  // the sandbox the caller was judged in (IoctlLsm's scope number)
  char comm[16];
};
