// The seccomp filters of a sandbox. The idea not to miss: a trap must match what the *driver*
// dispatches on, not what the request conventionally looks like. The NVIDIA frontend ignores the
// ioctl type byte (and direction bits) and dispatches on (number, size), so its escapes are
// trapped by (nr, size) with type and direction masked; uverbs compares the whole request with
// RDMA_VERBS_IOCTL, so type 0x1b is enough there; UVM uses raw, exact numbers.
// Two filters are installed:
//   - a refusal filter (plain errno answers, evaluated by the kernel before any notification
//     since ERRNO outranks USER_NOTIF): userfaultfd and open_by_handle_at always; where Landlock
//     cannot check device ioctls, also the other opens the broker cannot police (io_uring,
//     openat2, ioctl-only opens with access mode 3);
//   - the notify filter that hands the supervisor: ioctls that may reach a device, and opens
//     that may name a device (with the kernel checking device ioctls, only opens for writing;
//     otherwise every open).
// Every comparison masks to 32 bits because the kernel truncates the ioctl request to an
// unsigned int: a caller cannot slip past the filter by setting high bits.
#pragma once

#include <cstdint>
#include <vector>

namespace gdrproxy::proxy {

enum class OpenTrap { kWriteOpens, kAllOpens };

struct FilterOptions {
  OpenTrap open_trap = OpenTrap::kWriteOpens;
  // The kernel does not check device ioctls (Landlock ABI < 5): refuse the opens the broker never
  // sees or cannot decide race-free.
  bool refuse_unbrokered_opens = false;
  // Refuse io_uring (ENOSYS) even where Landlock checks device ioctls: set when some NVIDIA GPU
  // is not granted, because its driver counts any open fd of a GPU node as access to that GPU.
  bool refuse_io_uring = false;
  // Trap pidfd_getfd so the supervisor performs it for processes of the same sandbox (opt-in:
  // `run --broker-pidfd-getfd`; without CAP_SYS_PTRACE the sandbox's own call fails).
  bool trap_pidfd_getfd = false;
};

// One ioctl-request comparison of the filter: (request & mask) == value.
struct IoctlMatch {
  uint32_t mask;
  uint32_t value;
  bool matches(uint32_t request) const { return (request & mask) == value; }
};

// The comparisons that trap NVIDIA frontend escapes of every driver release this build knows:
// (nr, size) for fixed-size escapes (both sizes where the driver takes two), nr alone where the
// size varies, and the canonical type 'F' for escapes no table names yet.
std::vector<IoctlMatch> nvidia_frontend_matches();

// Installs both filters on the calling thread (sets no_new_privs) and returns the listener fd.
// Throws std::runtime_error on failure.
int install_notify_filter(const FilterOptions& options);

}  // namespace gdrproxy::proxy
