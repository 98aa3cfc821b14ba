// The trap and refusal lists (see notify_rules.h). Each rule says why it is there, in the words
// the OCI profile carries next to it.
#include "proxy/sandbox/notify_rules.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>

#include "proxy/abi/nvidia_abi.h"
#include "proxy/abi/uverbs_abi.h"

namespace gdrproxy::proxy {
namespace {

constexpr uint32_t kNrMask = 0x000000ff;
constexpr uint32_t kNrSizeMask = 0x3fff00ff;  // _IOC_NR and _IOC_SIZE; type and dir ignored
constexpr uint32_t kTypeMask = 0x0000ff00;

SyscallRule trap_ioctl(IoctlMatch m, const char* why) {
  return {"ioctl", ArgMaskedEq{1, m.mask, m.value}, 0, why};
}

}  // namespace

std::vector<IoctlMatch> nvidia_frontend_matches() {
  std::vector<IoctlMatch> out{{kTypeMask, uint32_t{kNvIoctlType} << 8}};
  auto add = [&](IoctlMatch m) {
    if (std::none_of(out.begin(), out.end(),
                     [&](const IoctlMatch& o) { return o.mask == m.mask && o.value == m.value; }))
      out.push_back(m);
  };
  for (const NvEscape& e : nvidia_escapes_of_every_release()) {
    // Arrays (CARD_INFO, ATTACH_GPUS_TO_FD) and escapes whose size no table fixes: any size.
    if (e.elem_size != 0 || e.param_size == 0) {
      add({kNrMask, e.nr});
      continue;
    }
    add({kNrSizeMask, (uint32_t{e.param_size} << 16) | e.nr});
    if (e.alt_param_size) add({kNrSizeMask, (uint32_t{e.alt_param_size} << 16) | e.nr});
  }
  // A number-only comparison makes the size-keyed ones of the same number redundant.
  std::vector<uint32_t> any_size;
  for (const IoctlMatch& m : out)
    if (m.mask == kNrMask) any_size.push_back(m.value);
  std::erase_if(out, [&](const IoctlMatch& m) {
    return m.mask == kNrSizeMask &&
           std::find(any_size.begin(), any_size.end(), m.value & kNrMask) != any_size.end();
  });
  return out;
}

std::vector<IoctlMatch> uverbs_matches() {
  return {{kTypeMask, uint32_t{uverbs::kIoctlType} << 8}};
}

std::vector<IoctlMatch> nvidia_uvm_matches() {
  // UVM uses raw numbers: small ones (1..80 today), plus INITIALIZE/DEINITIALIZE and
  // UVM_IS_8_SUPPORTED (2047), above the small range.
  std::vector<IoctlMatch> out{{0xffffff00, 0}};
  for (uint32_t raw : {0x7ffu, 0x30000001u, 0x30000002u}) out.push_back({0xffffffff, raw});
  return out;
}

std::vector<SyscallRule> refusal_rules(const FilterOptions& options) {
  std::vector<SyscallRule> out{
      {"userfaultfd", std::nullopt, EPERM,
       "a page nobody serves would block the supervisor's reads of the caller's memory"},
      // An open by inode may land outside the root of the mount it is decoded in; Landlock then
      // judges it by that mount's root, which for a device node bind-mounted on its own is a
      // granted node. Device work never needs it.
      {"open_by_handle_at", std::nullopt, EPERM, "an open by inode escapes path-based checks"}};
  if (options.refuse_unbrokered_opens) {
    // ENOSYS makes openat2 and io_uring users fall back to plain calls.
    out.push_back({"openat2", std::nullopt, ENOSYS,
                   "its flags live in caller memory: no race-free decision without Landlock"});
    out.push_back({"open", ArgMaskedEq{1, O_ACCMODE, O_ACCMODE}, EACCES,
                   "access mode 3 needs no Landlock right before ABI 5"});
    out.push_back({"openat", ArgMaskedEq{2, O_ACCMODE, O_ACCMODE}, EACCES,
                   "access mode 3 needs no Landlock right before ABI 5"});
  }
  if (options.refuse_unbrokered_opens || options.refuse_io_uring)
    out.push_back({"io_uring_setup", std::nullopt, ENOSYS, "io_uring opens are never trapped"});
  return out;
}

std::vector<SyscallRule> notify_rules(const FilterOptions& options) {
  std::vector<SyscallRule> out;
  for (const IoctlMatch& m : uverbs_matches()) out.push_back(trap_ioctl(m, "uverbs ioctl"));
  for (const IoctlMatch& m : nvidia_frontend_matches())
    out.push_back(trap_ioctl(m, "NVIDIA frontend escape"));
  for (const IoctlMatch& m : nvidia_uvm_matches())
    out.push_back(trap_ioctl(m, m.mask == 0xffffffff ? "UVM initialisation" : "UVM ioctl"));
  if (options.trap_pidfd_getfd)
    out.push_back(
        {"pidfd_getfd", std::nullopt, 0, "judged by the supervisor: brokered, or refused"});
  if (options.open_trap == OpenTrap::kAllOpens) {
    for (const char* nr : {"open", "openat", "creat", "openat2"})
      out.push_back({nr, std::nullopt, 0, "every open may name a device"});
  } else {
    for (uint64_t mode : {uint64_t{O_WRONLY}, uint64_t{O_RDWR}, uint64_t{O_ACCMODE}}) {
      out.push_back({"open", ArgMaskedEq{1, O_ACCMODE, mode}, 0, "an open for writing"});
      out.push_back({"openat", ArgMaskedEq{2, O_ACCMODE, mode}, 0, "an open for writing"});
    }
    // creat() always opens for writing; openat2 keeps its flags in a struct the filter can't see.
    out.push_back({"creat", std::nullopt, 0, "always opens for writing"});
    out.push_back({"openat2", std::nullopt, 0, "its flags are out of the filter's sight"});
  }
  return out;
}

}  // namespace gdrproxy::proxy
