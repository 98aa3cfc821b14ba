// Test-only LD_PRELOAD library for crun on a machine whose root lacks CAP_SYS_RESOURCE: crun 1.8
// raises RLIMIT_MEMLOCK to unlimited before loading its device cgroup program and gives up when
// the raise fails. The kernel charges BPF programs to the memory cgroup since 5.11, so the limit
// is moot; this makes that one raise succeed without changing anything, and leaves every other
// setrlimit to libc. Used by tests/oci/runtime_shim_test.sh only, never by gdrproxy.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/resource.h>

int setrlimit(__rlimit_resource_t resource, const struct rlimit* limit) {
  static int (*real_setrlimit)(__rlimit_resource_t, const struct rlimit*);
  if (resource == RLIMIT_MEMLOCK) return 0;
  if (!real_setrlimit)
    real_setrlimit =
        (int (*)(__rlimit_resource_t, const struct rlimit*))dlsym(RTLD_NEXT, "setrlimit");
  return real_setrlimit(resource, limit);
}
