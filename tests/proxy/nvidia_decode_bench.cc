// Benchmark (not a test): the cost of decoding one NVIDIA ioctl and its result, over the calls
// recorded from a real NCCL run (tests/fixtures/nvidia/nccl-allreduce-2gpu.nvcap.gz), so that the
// mix of escapes, controls and UVM calls is the one the supervisor sees. Prints ns per call, and
// enforce mode's own pipeline: the decode at policy depth, then the built-in policy's verdict,
// with the verdict's cost as a ratio of that decode's (the baseline from the same run).
// Run: build/tests/proxy/nvidia_decode_bench [REPEATS]
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "proxy/decode/nvidia_decoder.h"
#include "proxy/policy/policy.h"

using namespace gdrproxy::proxy;

namespace {

struct Call {
  uint32_t kind, cmd;
  uint64_t arg;
  BufferMemory before;
  std::vector<uint8_t> after;
};

std::vector<Call> load(const char* path) {
  std::vector<uint8_t> d;
  gzFile f = gzopen(path, "rb");
  if (f == nullptr) return {};
  uint8_t buf[65536];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) d.insert(d.end(), buf, buf + n);
  gzclose(f);
  std::vector<Call> calls;
  size_t o = 8;
  while (o + 28 <= d.size()) {
    Call c;
    uint32_t nregions;
    std::memcpy(&c.kind, &d[o], 4);
    std::memcpy(&c.cmd, &d[o + 4], 4);
    std::memcpy(&c.arg, &d[o + 8], 8);
    std::memcpy(&nregions, &d[o + 24], 4);
    o += 28;
    for (uint32_t i = 0; i < nregions && o + 12 <= d.size(); ++i) {
      uint64_t addr;
      uint32_t len;
      std::memcpy(&addr, &d[o], 8);
      std::memcpy(&len, &d[o + 8], 4);
      o += 12;
      if (d.size() - o < 2ull * len) return calls;
      c.before.map(addr, std::vector<uint8_t>(d.begin() + o, d.begin() + o + len));
      if (i == 0) c.after.assign(d.begin() + o + len, d.begin() + o + 2 * len);
      o += 2ull * len;
    }
    calls.push_back(std::move(c));
  }
  return calls;
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 20;
  const auto calls =
      load(GDRPROXY_SOURCE_DIR "/tests/fixtures/nvidia/nccl-allreduce-2gpu.nvcap.gz");
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
  return 0;
}
