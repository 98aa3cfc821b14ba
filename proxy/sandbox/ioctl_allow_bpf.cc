// The exact-request ALLOW block (see ioctl_allow_bpf.h): groups of up to 16 requests, each behind
// one range check, so a request that is not allowed costs about (groups + 16) comparisons.
#include "proxy/sandbox/ioctl_allow_bpf.h"

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include <cstddef>

#include "base/error.h"

namespace gdrproxy::proxy {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kNativeArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kNativeArch = AUDIT_ARCH_AARCH64;
#else
#error "the ioctl ALLOW block knows x86_64 and aarch64"
#endif

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ioctl ALLOW block reads the low word of args[1] at its little-endian offset"
#endif

constexpr uint32_t kArchOffset = offsetof(seccomp_data, arch);
constexpr uint32_t kNrOffset = offsetof(seccomp_data, nr);
constexpr uint32_t kRequestLowOffset = offsetof(seccomp_data, args) + sizeof(uint64_t);
constexpr size_t kGroup = 16;

sock_filter stmt(uint16_t code, uint32_t k) {
  return BPF_STMT(code, k);
}
sock_filter jump(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
  return BPF_JUMP(code, k, jt, jf);
}

}  // namespace

std::vector<sock_filter> ioctl_allow_block(std::span<const uint32_t> sorted_requests) {
  if (sorted_requests.empty()) return {};
  if (sorted_requests.size() > kMaxKernelAllowedIoctls)
    throw Error("seccomp filter: too many in-kernel ioctl ALLOWs");
  for (size_t i = 1; i < sorted_requests.size(); ++i)
    if (sorted_requests[i] <= sorted_requests[i - 1])
      throw Error("seccomp filter: in-kernel ioctl ALLOWs must be sorted and unique");

  std::vector<sock_filter> out;
  std::vector<size_t> to_end;  // indexes of `ja` instructions that must land after the block
  auto ja_end = [&] {
    to_end.push_back(out.size());
    out.push_back(stmt(BPF_JMP | BPF_JA, 0));
  };
  out.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, kArchOffset));
  out.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, kNativeArch, 1, 0));
  ja_end();
  out.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, kNrOffset));
  out.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 1, 0));
  ja_end();
  out.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, kRequestLowOffset));
  for (size_t g = 0; g < sorted_requests.size(); g += kGroup) {
    const std::span<const uint32_t> group =
        sorted_requests.subspan(g, std::min(kGroup, sorted_requests.size() - g));
    const auto n = static_cast<uint8_t>(group.size());
    // Above this group's largest request: skip its n comparisons, its miss and its return.
    out.push_back(jump(BPF_JMP | BPF_JGT | BPF_K, group.back(), static_cast<uint8_t>(n + 2), 0));
    for (uint8_t i = 0; i < n; ++i)
      out.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, group[i], static_cast<uint8_t>(n - i), 0));
    ja_end();  // at most this group's largest and none of its members: not allowed
    out.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  }
  for (size_t at : to_end) out[at].k = static_cast<uint32_t>(out.size() - at - 1);
  return out;
}

}  // namespace gdrproxy::proxy
