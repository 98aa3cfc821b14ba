// The seccomp filter that hands device calls to the supervisor. It traps only:
//   - ioctl whose type byte is 0x1b (uverbs) or 0x46 ('F', NVIDIA frontend), and the raw UVM
//     command numbers (below 0x100, and 0x30000001/0x30000002);
//   - write() on the fd range rdma_cm fds are injected into (rdma_cm commands);
//   - opens that may name a device: with the Landlock guard, only opens for writing (O_WRONLY,
//     O_RDWR, creat, openat2) since read-only device opens are refused by the kernel; without
//     it, every open.
// Every comparison masks to 32 bits because the kernel truncates the ioctl request to an
// unsigned int: a caller cannot slip past the filter by setting high bits.
#pragma once

namespace gdrproxy::proxy {

enum class OpenTrap { kWriteOpens, kAllOpens };

struct FilterOptions {
  OpenTrap open_trap = OpenTrap::kWriteOpens;
  // rdma_cm commands travel by write(): when >= 0, write() on fds [base, base+16) traps too. The
  // broker injects rdma_cm fds only there, so no other write of the process ever traps.
  int rdma_cm_fd_base = -1;
};

// Installs the filter on the calling thread (sets no_new_privs) and returns the listener fd.
// Throws std::runtime_error on failure.
int install_notify_filter(const FilterOptions& options);

}  // namespace gdrproxy::proxy
