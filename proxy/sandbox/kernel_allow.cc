// Compiling a policy into the exact requests the kernel may run untrapped (see kernel_allow.h).
// Each candidate is decoded by the real decoder from zeroed parameters and judged by the real
// policy, so the filter can never be more permissive than the supervisor it stands in for.
#include "proxy/sandbox/kernel_allow.h"

#include <algorithm>

#include "proxy/decode/nvidia_decoder.h"
#include "proxy/mem/memory_reader.h"
#include "proxy/sandbox/notify_rules.h"

namespace gdrproxy::proxy {
namespace {

constexpr uint64_t kParams = 0x10000;  // where the zeroed parameters lie

bool any_matches(const std::vector<IoctlMatch>& ms, uint32_t request) {
  return std::any_of(ms.begin(), ms.end(), [&](const IoctlMatch& m) { return m.matches(request); });
}

bool allowed_from_zeroes(const Policy& policy, const DecodedCall& call) {
  return call.malformed.empty() &&
         policy.evaluate(call, /*explain_allow=*/false).action == Action::kAllow;
}

}  // namespace

KernelAllowed kernel_allowed_ioctls(const Policy& policy, const KernelAllowFacts& facts) {
  KernelAllowed out;
  if (!facts.nvidia_abi) return out;
  const NvidiaDriverAbi& abi = *facts.nvidia_abi;
  const std::vector<IoctlMatch> uverbs = uverbs_matches();
  const std::vector<IoctlMatch> frontend = nvidia_frontend_matches();
  const std::vector<IoctlMatch> uvm = nvidia_uvm_matches();
  BufferMemory zeroes;
  zeroes.map(kParams, std::vector<uint8_t>(0x10000, 0));  // larger than any struct

  const bool uvm_qualifies =
      facts.nvidia_uvm_all_granted || (facts.judged_per_device && facts.nvidia_uvm_any_granted);
  const bool frontend_qualifies = facts.nvidia_frontend_all_granted ||
                                  (facts.judged_per_device && facts.nvidia_frontend_any_granted);
  if (uvm_qualifies) {
    for (const NvUvmIoctl& u : abi.uvm_ioctls) {
      if (!any_matches(uvm, u.cmd) || any_matches(frontend, u.cmd) || any_matches(uverbs, u.cmd))
        continue;
      const DecodedCall c =
          decode_nvidia_uvm_ioctl(u.cmd, kParams, zeroes, abi, DecodeDepth::kPolicy);
      if (!allowed_from_zeroes(policy, c)) continue;
      out.requests.push_back(u.cmd);
      out.uvm_requests.push_back(u.cmd);
      out.names.push_back(u.name);
      ++out.uvm;
    }
  }
  if (frontend_qualifies) {
    for (const NvEscape& e : abi.escapes) {
      if (!nv_escape_keys_from_request(abi, e.nr)) continue;
      bool any = false;
      for (uint32_t size : {uint32_t{e.param_size}, uint32_t{e.alt_param_size}}) {
        if (size == 0) continue;
        const uint32_t request = nv_escape_request(e.nr, size);
        if (any_matches(uvm, request) || any_matches(uverbs, request)) continue;
        const DecodedCall c =
            decode_nvidia_frontend_ioctl(request, kParams, zeroes, abi, DecodeDepth::kPolicy);
        if (!allowed_from_zeroes(policy, c)) continue;
        out.requests.push_back(request);
        out.frontend_requests.push_back(request);
        any = true;
      }
      if (any) {
        out.names.push_back(e.name);
        ++out.frontend;
      }
    }
  }
  std::sort(out.requests.begin(), out.requests.end());
  out.requests.erase(std::unique(out.requests.begin(), out.requests.end()), out.requests.end());
  return out;
}

}  // namespace gdrproxy::proxy
