// Kernel-enforced backstop for device grants: a Landlock domain in which the sandbox can use no
// ungranted device node, however it got hold of it. The idea not to miss: Landlock checks how a
// file was *reached* at open time, and a device is used through ioctls, so the domain handles
// LANDLOCK_ACCESS_FS_IOCTL_DEV (ABI >= 5) and grants it only on granted nodes and on host
// devices outside the catalog (ttys, /dev/null, ...). An ungranted node reached any way the
// seccomp filter never sees (io_uring, an ioctl-only open with access mode 3, a bind mount made
// outside) is then refused by the kernel at its first ioctl. (Not an open by handle decoded in a
// per-file bind mount: Landlock judges that by the mount's root, so the filter refuses
// open_by_handle_at outright.) Making,
// linking or renaming a device node is refused everywhere (MAKE_CHAR/MAKE_BLOCK handled, never
// granted), and the sandbox cannot signal anything outside it (signal scoping, ABI >= 6).
// Files opened outside the domain keep every right: the NVIDIA fds the supervisor opens and
// injects are not restricted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "proxy/devices/device_catalog.h"

namespace gdrproxy::proxy {

// What the running kernel's Landlock lets the guard enforce.
struct LandlockLevel {
  int abi = 0;                 // 0 = no Landlock
  bool device_ioctls = false;  // ABI >= 5: ioctls on device files are checked
  bool reparenting = false;    // ABI >= 2: cross-directory link/rename (REFER) can be granted
  bool signal_scope = false;   // ABI >= 6: no signal leaves the domain
  bool complete() const { return device_ioctls && signal_scope; }
};

// Returns the Landlock ABI version of the running kernel, or 0 when Landlock is unavailable.
int landlock_abi_version();
// What the guard may use: the kernel's ABI, lowered to `abi_max` when given (never raised;
// `gdrproxy run --landlock-abi`).
LandlockLevel landlock_level(std::optional<int> abi_max = std::nullopt);

// One line saying what this kernel does *not* guarantee, or "" when the level is complete.
std::string landlock_shortfall(const LandlockLevel& level);

// Applies the domain to the calling thread (inherited by children and across exec). Call after
// PR_SET_NO_NEW_PRIVS. Returns false and sets `why` when the kernel refuses.
// Granted uverbs/rdma_cm nodes stay readable, writable and ioctl-able (the caller opens those
// itself; see the open broker). Granted nvidia-caps nodes stay readable only: CUDA opens them
// O_RDONLY as capability tokens (no ioctls), so they need no brokering.
bool apply_device_guard(const DeviceCatalog& catalog, const Grants& grants,
                        const LandlockLevel& level, std::string& why);

}  // namespace gdrproxy::proxy
