// Benchmark (not a test): the cost of decoding one NVIDIA ioctl and its result, over the calls
// recorded from a real NCCL run (tests/fixtures/nvidia/nccl-allreduce-2gpu.nvcap.gz), so that the
// mix of escapes, controls and UVM calls is the one the supervisor sees. Prints ns per call, and
// enforce mode's own pipeline: the decode at policy depth, then the built-in policy's verdict,
// with the verdict's cost as a ratio of that decode's (the baseline from the same run).
// Run: build/tests/proxy/nvidia_decode_bench [REPEATS]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "proxy/decode/nvidia_decoder.h"
#include "proxy/policy/policy.h"
#include "proxy/sandbox/kernel_allow.h"
#include "tests/proxy/nvidia_capture.h"

using namespace gdrproxy::proxy;

namespace {

struct Call {
  uint32_t kind, cmd;
  uint64_t arg;
  BufferMemory before;
  std::vector<uint8_t> after;
};

std::vector<Call> load(const char* name) {
  std::vector<Call> calls;
  for (const testing_capture::Record& r : testing_capture::load(name))
    calls.push_back({r.kind, r.cmd, r.arg, r.before(),
                     r.regions.empty() ? std::vector<uint8_t>{} : r.regions.front().post});
  return calls;
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 20;
  const auto calls = load("nccl-allreduce-2gpu.nvcap.gz");
  if (calls.empty()) {
    std::fprintf(stderr, "cannot read the NCCL fixture\n");
    return 1;
  }
  const NvidiaDriverAbi& abi = *nvidia_abi_for_version("580.159.04");
  size_t fields = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r) {
    for (const Call& c : calls) {
      const DecodedCall d = c.kind == 2 ? decode_nvidia_uvm_ioctl(c.cmd, c.arg, c.before, abi)
                                        : decode_nvidia_frontend_ioctl(c.cmd, c.arg, c.before, abi);
      std::vector<DecodedField> out;
      decode_nvidia_result(d, c.after, {}, out);
      fields += d.args.size() + out.size();
    }
  }
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  const size_t n = calls.size() * static_cast<size_t>(repeats);
  std::printf("%zu calls (%zu distinct), %.0f ns per call for decode + result (%zu fields)\n", n,
              calls.size(), ns / static_cast<double>(n), fields);

  // Enforce mode: decode what the policy matches on, then judge it.
  const Policy policy = Policy::builtin_default();
  std::vector<DecodedCall> decoded;
  const auto t1 = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r) {
    for (const Call& c : calls) {
      DecodedCall d =
          c.kind == 2
              ? decode_nvidia_uvm_ioctl(c.cmd, c.arg, c.before, abi, DecodeDepth::kPolicy)
              : decode_nvidia_frontend_ioctl(c.cmd, c.arg, c.before, abi, DecodeDepth::kPolicy);
      if (r == 0) decoded.push_back(std::move(d));
    }
  }
  const auto t2 = std::chrono::steady_clock::now();
  size_t allowed = 0;
  for (int r = 0; r < repeats; ++r) {
    for (const DecodedCall& d : decoded) allowed += policy.evaluate(d).action == Action::kAllow;
  }
  const auto t3 = std::chrono::steady_clock::now();
  const double decode_ns = std::chrono::duration<double, std::nano>(t2 - t1).count() / double(n);
  const double policy_ns = std::chrono::duration<double, std::nano>(t3 - t2).count() / double(n);
  std::printf(
      "enforce: decode %.0f ns, policy %.0f ns per call (policy/decode %.2f); %zu of %zu "
      "allowed\n",
      decode_ns, policy_ns, policy_ns / decode_ns, allowed / size_t(repeats), decoded.size());

  // In-kernel ALLOW with the default policy, every node granted: the calls that never trap.
  const KernelAllowed k =
      kernel_allowed_ioctls(policy, KernelAllowFacts{&abi, /*frontend=*/true, /*uvm=*/true});
  size_t untrapped = 0, untrapped_uvm = 0;
  for (const Call& c : calls) {
    const bool in = std::binary_search(k.requests.begin(), k.requests.end(), c.cmd);
    untrapped += in;
    untrapped_uvm += in && c.kind == 2;
  }
  std::printf(
      "kernel-allow: %zu of %zu calls (%.0f %%) never trap, %zu of them UVM calls (%zu "
      "requests: %u UVM, %u NVIDIA escapes)\n",
      untrapped, calls.size(), 100.0 * double(untrapped) / double(calls.size()), untrapped_uvm,
      k.requests.size(), k.uvm, k.frontend);
  return 0;
}
