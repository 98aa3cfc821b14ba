// What gdrproxy needs trapped or refused, as data: one list serves the filter `gdrproxy run`
// installs itself and the rules `gdrproxy oci seccomp` writes into a container's OCI profile, so
// the two can never disagree. The idea not to miss: a trap must match what the *driver*
// dispatches on. The NVIDIA frontend ignores the ioctl type byte (and direction bits) and
// dispatches on (number, size), so its escapes are trapped by (nr, size) with type and direction
// masked; uverbs compares the whole request with RDMA_VERBS_IOCTL, so type 0x1b is enough there;
// UVM uses raw, exact numbers. Every ioctl comparison masks to 32 bits because the kernel
// truncates the request to an unsigned int: high bits cannot slip a call past the filter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
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
  // Trap pidfd_getfd so the supervisor judges it (`run --broker-pidfd-getfd`; without it `run`'s
  // sandbox lacks CAP_SYS_PTRACE). An OCI profile always sets it (seccomp_profile.h).
  bool trap_pidfd_getfd = false;
  // Exact ioctl requests (sorted, unique) the kernel lets run without a trap: those the policy
  // allows whatever their parameters on every device that could receive them
  // (proxy/sandbox/kernel_allow.h). `gdrproxy run`'s filter puts them in a cBPF block in front
  // of libseccomp's program (ioctl_allow_bpf.h); an OCI profile as exact ALLOW rules that
  // libseccomp orders before the traps (profile_untrapped.h).
  std::vector<uint32_t> kernel_allowed_ioctls;
};

// One ioctl-request comparison of the filter: (request & mask) == value.
struct IoctlMatch {
  uint32_t mask;
  uint32_t value;
  bool matches(uint32_t request) const { return (request & mask) == value; }
};

// (args[index] & mask) == value, the one comparison the rules use (SCMP_CMP_MASKED_EQ).
struct ArgMaskedEq {
  unsigned index;
  uint64_t mask;
  uint64_t value;
};

// A syscall by name, trapped (errno == 0: SCMP_ACT_NOTIFY) or refused with errno; when `arg` is
// set, only calls whose argument matches.
struct SyscallRule {
  std::string syscall;
  std::optional<ArgMaskedEq> arg;
  int errno_value = 0;
  std::string why;  // one line, for the profile's comment and the reader
};

// The comparisons that trap NVIDIA frontend escapes of every driver release this build knows:
// (nr, size) for fixed-size escapes (both sizes where the driver takes two), nr alone where the
// size varies, and the canonical type 'F' for escapes no table names yet.
std::vector<IoctlMatch> nvidia_frontend_matches();
// The comparison that traps uverbs ioctls (type 0x1b) and the ones that trap UVM's raw numbers.
std::vector<IoctlMatch> uverbs_matches();
std::vector<IoctlMatch> nvidia_uvm_matches();

// Calls answered with an errno, never notified: userfaultfd and open_by_handle_at always; where
// Landlock cannot check device ioctls, also the opens the broker cannot police.
std::vector<SyscallRule> refusal_rules(const FilterOptions& options);
// Calls handed to the supervisor: ioctls that may reach a device, the opens that may name one,
// and pidfd_getfd when it is brokered.
std::vector<SyscallRule> notify_rules(const FilterOptions& options);

}  // namespace gdrproxy::proxy
