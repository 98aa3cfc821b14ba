// Kernel-enforced backstop for device grants: a Landlock domain in which the sandboxed process
// may read and write every file except the catalogued device nodes. The only way to obtain a
// device fd is then a brokered open (the supervisor opens it and injects the fd), so a path
// swapped between the broker's check and a CONTINUEd open cannot reach a device.
#pragma once

#include <string>

#include "proxy/devices/device_catalog.h"

namespace gdrproxy::proxy {

// Returns the Landlock ABI version of the running kernel, or 0 when Landlock is unavailable.
int landlock_abi_version();

// Applies the domain to the calling thread (inherited by children and across exec). Call after
// PR_SET_NO_NEW_PRIVS. Returns false and sets `why` when the kernel refuses.
// Granted uverbs/rdma_cm nodes stay readable and writable (the caller opens those itself; see
// the open broker). Granted nvidia-caps nodes stay readable: CUDA opens them O_RDONLY as capability
// tokens (no ioctls), so they need no brokering and read-only opens never have to trap.
bool apply_device_guard(const DeviceCatalog& catalog, const Grants& grants, std::string& why);

}  // namespace gdrproxy::proxy
