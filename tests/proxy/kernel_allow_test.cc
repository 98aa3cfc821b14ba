// Which requests a policy lets run untrapped (proxy/sandbox/kernel_allow.h). The idea not to
// miss: the filter stands in for the supervisor only where the supervisor's answer could not
// depend on anything but the number, so every recorded call of a real CUDA/NCCL run whose request
// is in the set must be allowed by the real decoder and policy from its real parameters, and a
// rule, a missing grant or an unknown driver must take requests out of the set.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "proxy/decode/nvidia_decoder.h"
#include "proxy/sandbox/kernel_allow.h"
#include "proxy/sandbox/notify_rules.h"
#include "tests/proxy/nvidia_capture.h"

namespace gdrproxy::proxy {
namespace {

const NvidiaDriverAbi& abi580() {
  return *nvidia_abi_for_version("580.159.04");
}

KernelAllowed allowed(const Policy& p, bool frontend = true, bool uvm = true) {
  return kernel_allowed_ioctls(p, KernelAllowFacts{&abi580(), frontend, uvm});
}

bool has(const KernelAllowed& k, uint32_t request) {
  return std::binary_search(k.requests.begin(), k.requests.end(), request);
}

constexpr uint32_t kRmFree = 0xc0104629;     // _IOWR('F', 0x29, NVOS00)
constexpr uint32_t kRmAlloc = 0xc030462b;    // its class is in its parameters
constexpr uint32_t kRmControl = 0xc020462a;  // its control is in its parameters
constexpr uint32_t kUvmInitialize = 0x30000001;

TEST(KernelAllow, DefaultPolicyLetsUvmAndParameterFreeEscapesRun) {
  const KernelAllowed k = allowed(Policy::builtin_default());
  EXPECT_TRUE(has(k, kRmFree));
  EXPECT_TRUE(has(k, kUvmInitialize));
  EXPECT_FALSE(has(k, kRmAlloc));
  EXPECT_FALSE(has(k, kRmControl));
  EXPECT_GT(k.uvm, 20u);
  EXPECT_GT(k.frontend, 2u);
  EXPECT_TRUE(std::is_sorted(k.requests.begin(), k.requests.end()));
}

TEST(KernelAllow, NoRequestAnotherDriverWouldRunIsLetThrough) {
  // A UVM number the frontend would run as an escape of any size, or anything uverbs takes,
  // must stay trapped: the filter cannot tell which device an fd is.
  const KernelAllowed k = allowed(Policy::builtin_default());
  const auto frontend = nvidia_frontend_matches();
  const auto uverbs = uverbs_matches();
  const auto uvm = nvidia_uvm_matches();
  for (uint32_t r : k.requests) {
    const auto hit = [&](const std::vector<IoctlMatch>& ms) {
      return std::any_of(ms.begin(), ms.end(), [&](const IoctlMatch& m) { return m.matches(r); });
    };
    EXPECT_FALSE(hit(uverbs)) << std::hex << r;
    EXPECT_NE(hit(frontend), hit(uvm)) << std::hex << r << ": trapped for exactly one driver";
  }
}

TEST(KernelAllow, ARuleOnTheCallKeepsItTrapped) {
  const Policy deny_free = Policy::from_json(
      nlohmann::json::parse(
          R"({"version":1,"classes":{"nvidia":{"rules":[{"action":"deny","escape":"RM_FREE"}]}}})"),
      "test");
  EXPECT_FALSE(has(allowed(deny_free), kRmFree));
  EXPECT_TRUE(has(allowed(deny_free), kUvmInitialize));
  // A class that denies by default lets through only the calls its rules allow by name.
  const Policy by_call = Policy::from_json(
      nlohmann::json::parse(
          R"({"version":1,"classes":{"nvidia-uvm":{"default":"deny","rules":[{"action":"allow","call":"UVM_INITIALIZE"}]}}})"),
      "test");
  const KernelAllowed k = allowed(by_call);
  EXPECT_TRUE(has(k, kUvmInitialize));
  EXPECT_EQ(k.uvm, 1u);
}

TEST(KernelAllow, UngrantedNodesOrAnUnknownDriverKeepEverythingTrapped) {
  const Policy p = Policy::builtin_default();
  const KernelAllowed no_gpu = allowed(p, /*frontend=*/false, /*uvm=*/true);
  EXPECT_FALSE(has(no_gpu, kRmFree));
  EXPECT_EQ(no_gpu.frontend, 0u);
  EXPECT_TRUE(has(no_gpu, kUvmInitialize));
  EXPECT_EQ(allowed(p, true, false).uvm, 0u);
  EXPECT_TRUE(kernel_allowed_ioctls(p, KernelAllowFacts{}).requests.empty());
}

TEST(KernelAllow, APerDeviceJudgeLetsAClassQualifyWithSomeNodeGranted) {
  // One GPU of two granted: without the BPF LSM judge no escape may skip the trap (an fd of the
  // other GPU would get it unjudged); with it they qualify, listed by the class they are for.
  const Policy p = Policy::builtin_default();
  KernelAllowFacts some{&abi580(), /*frontend all*/ false, /*uvm all*/ true};
  some.nvidia_frontend_any_granted = some.nvidia_uvm_any_granted = true;
  EXPECT_EQ(kernel_allowed_ioctls(p, some).frontend, 0u);
  some.judged_per_device = true;
  const KernelAllowed k = kernel_allowed_ioctls(p, some);
  EXPECT_TRUE(has(k, kRmFree));
  EXPECT_TRUE(has(k, kUvmInitialize));
  EXPECT_EQ(k.requests, allowed(p).requests) << "the same set as with every node granted";
  EXPECT_NE(std::find(k.frontend_requests.begin(), k.frontend_requests.end(), kRmFree),
            k.frontend_requests.end());
  EXPECT_NE(std::find(k.uvm_requests.begin(), k.uvm_requests.end(), kUvmInitialize),
            k.uvm_requests.end());
  EXPECT_EQ(k.uvm_requests.size() + k.frontend_requests.size() >= k.requests.size(), true);
  // No node of a class granted: the judge does not make it qualify.
  KernelAllowFacts none = some;
  none.nvidia_frontend_any_granted = false;
  none.nvidia_uvm_all_granted = none.nvidia_uvm_any_granted = false;
  EXPECT_TRUE(kernel_allowed_ioctls(p, none).requests.empty());
}

TEST(KernelAllow, EveryRecordedCallLetThroughIsOneThePolicyAllowsFromItsRealParameters) {
  const Policy policy = Policy::builtin_default();
  const KernelAllowed k = allowed(policy);
  for (const char* file : {"nccl-allreduce-2gpu.nvcap.gz", "pytorch-matmul.nvcap.gz",
                           "cuda-dmabuf.nvcap.gz", "nccl-allreduce.nvcap.gz"}) {
    const auto recs = testing_capture::load(file);
    ASSERT_FALSE(recs.empty()) << file;
    size_t untrapped = 0;
    for (const testing_capture::Record& r : recs) {
      if (!has(k, r.cmd)) continue;
      ++untrapped;
      const BufferMemory mem = r.before();
      const DecodedCall c =
          r.kind == 2
              ? decode_nvidia_uvm_ioctl(r.cmd, r.arg, mem, abi580(), DecodeDepth::kPolicy)
              : decode_nvidia_frontend_ioctl(r.cmd, r.arg, mem, abi580(), DecodeDepth::kPolicy);
      EXPECT_EQ(policy.evaluate(c).action, Action::kAllow) << file << " " << c.name;
      EXPECT_FALSE(c.keys.nv_class || c.keys.nv_control || c.keys.nv_device_instance)
          << file << " " << c.name << ": its keys came from its parameters";
    }
    // A quarter or more of a CUDA or NCCL run's device calls no longer trap.
    EXPECT_GT(4 * untrapped, recs.size()) << file << ": " << untrapped << " of " << recs.size();
  }
}

TEST(KernelAllow, QualifyingEscapesDecodeTheSameWhateverTheirParametersHold) {
  // Random parameter bytes must give the same name and keys as zeroes.
  const NvidiaDriverAbi& abi = abi580();
  uint32_t seed = 12345;
  for (const NvEscape& e : abi.escapes) {
    if (!nv_escape_keys_from_request(abi, e.nr)) continue;
    const uint32_t request = nv_escape_request(e.nr, e.param_size);
    BufferMemory zero, noise;
    std::vector<uint8_t> bytes(e.param_size);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>((seed = seed * 1103515245 + 12345) >> 16);
    zero.map(0x1000, std::vector<uint8_t>(e.param_size, 0));
    noise.map(0x1000, bytes);
    const DecodedCall a = decode_nvidia_frontend_ioctl(request, 0x1000, zero, abi);
    const DecodedCall b = decode_nvidia_frontend_ioctl(request, 0x1000, noise, abi);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.malformed, b.malformed);
    EXPECT_EQ(a.keys.nv_escape, b.keys.nv_escape);
    EXPECT_FALSE(b.keys.nv_class || b.keys.nv_control || b.keys.nv_device_instance) << b.name;
  }
  EXPECT_FALSE(nv_escape_keys_from_request(abi, kNvEscRmAlloc));
  EXPECT_FALSE(nv_escape_keys_from_request(abi, kNvEscRmControl));
  EXPECT_FALSE(nv_escape_keys_from_request(abi, kNvEscIoctlXferCmd));
}

}  // namespace
}  // namespace gdrproxy::proxy
