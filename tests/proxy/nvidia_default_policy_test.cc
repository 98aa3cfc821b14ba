// Every NVIDIA call recorded from real tools on the GPU machine (driver 580.159.04,
// tests/fixtures/nvidia/) against the built-in default policy, decoded as the engine decodes
// it: CUDA, PyTorch, NCCL, nvidia-smi, nvidia-smi -q, every nvmlDeviceGet* of NVML,
// torch.compile and a CUPTI profile are allowed whole; `nvidia-smi -pl` (run as root there) is
// refused exactly its privileged call, and its refusal names the command and why.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/error.h"
#include "proxy/abi/nvidia_generated.h"
#include "proxy/decode/nvidia_decoder.h"
#include "proxy/policy/policy.h"
#include "tests/proxy/nvidia_capture.h"

namespace gdrproxy::proxy {
namespace {

using testing_capture::load;
using testing_capture::Record;

struct Verdicts {
  size_t calls = 0;
  std::map<std::string, std::string> denied;  // subject -> reason
};

Verdicts judge(const char* file) {
  const NvidiaDriverAbi& abi = *nvidia_abi_for_version("580.159.04");
  const Policy policy = Policy::builtin_default();
  Verdicts v;
  for (const Record& r : load(file)) {
    const BufferMemory mem = r.before();
    DecodedCall c;  // the decoders set its device class
    if (r.kind == 2)
      decode_nvidia_uvm_ioctl(c, r.cmd, r.arg, mem, abi, DecodeDepth::kPolicy);
    else
      decode_nvidia_frontend_ioctl(c, r.cmd, r.arg, mem, abi, DecodeDepth::kPolicy);
    ++v.calls;
    // The captures hold one level of parameters: the deviceId an NV01_DEVICE_0 allocation
    // points to is not in them. The engine asks the driver which GPU that is at run time
    // (tests/gpu/run.sh's ungranted-GPU attacks); here it is left out.
    if (c.malformed.rfind("RM_ALLOC(NV01_DEVICE_0) parameters at ", 0) == 0) continue;
    const Verdict verdict = policy.evaluate(c);
    if (verdict.action == Action::kDeny)
      v.denied[c.name + " " + nvidia_call_subject(c, abi)] = verdict.reason;
  }
  return v;
}

// An RM call as the decoder keys it: the escape, the control or class, and who the driver lets
// make it.
DecodedCall rm_call(uint8_t escape, std::optional<uint32_t> control, std::optional<uint32_t> cls,
                    NvRequires needs) {
  DecodedCall c;
  c.device_class = DeviceClass::kNvidiaFrontend;
  c.keys.nv_escape = escape;
  c.keys.nv_control = control;
  c.keys.nv_class = cls;
  c.keys.nv_needs = needs;
  c.keys.nv_named = true;  // the session's tables name the escape
  return c;
}

class RecordedTool : public ::testing::TestWithParam<const char*> {};

TEST_P(RecordedTool, DefaultPolicyAllowsEveryCall) {
  const Verdicts v = judge(GetParam());
  EXPECT_GT(v.calls, 40u);
  for (const auto& [what, why] : v.denied) ADD_FAILURE() << what << ": " << why;
}

INSTANTIATE_TEST_SUITE_P(Nvidia580, RecordedTool,
                         ::testing::Values("cuda-dmabuf.nvcap.gz", "pytorch-matmul.nvcap.gz",
                                           "nccl-allreduce.nvcap.gz",
                                           "nccl-allreduce-2gpu.nvcap.gz", "nvidia-smi.nvcap.gz",
                                           "nvidia-smi-q.nvcap.gz", "nvml-sweep.nvcap.gz",
                                           "torch-compile.nvcap.gz", "torch-profile.nvcap.gz"));

TEST(RecordedTool, SettingThePowerLimitIsRefusedByName) {
  const Verdicts v = judge("nvidia-smi-pl.nvcap.gz");
  ASSERT_EQ(v.denied.size(), 1u);
  const auto& [what, why] = *v.denied.begin();
  EXPECT_EQ(what,
            "RM_CONTROL cmd=NV20_SUBDEVICE_0_PMGR_GSS_LEGACY_PRIVILEGED_MSG_1E(0x2080e61e) [class "
            "NV20_SUBDEVICE_0, forwarded to the GPU firmware (GSS legacy bit 0x8000, privileged "
            "bits 0xc000)]");
  EXPECT_EQ(why, "nvidia privileged: the driver lets only an administrator make it");
}

TEST(RecordedTool, ARuleAllowsANamedPrivilegedControl) {
  const Policy p = Policy::from_json(
      nlohmann::json::parse(
          R"({"classes": {"nvidia": {"rules": [{"action": "allow", "control": "0x2080e61e"}]}}})"),
      "test");
  DecodedCall c = rm_call(kNvEscRmControl, 0x2080e61e, std::nullopt, NvRequires::kAdmin);
  EXPECT_EQ(p.evaluate(c).action, Action::kAllow);
  c.keys.nv_control = 0x2080e61f;
  EXPECT_EQ(p.evaluate(c).action, Action::kDeny);
  // "privileged": "allow" lets every one through; the key is the nvidia class's alone.
  const Policy open = Policy::from_json(
      nlohmann::json::parse(R"({"classes": {"nvidia": {"privileged": "allow"}}})"), "test");
  EXPECT_EQ(open.evaluate(c).action, Action::kAllow);
  c.keys.nv_needs = NvRequires::kNotTheDrivers;
  EXPECT_EQ(open.evaluate(c).action, Action::kDeny);
  EXPECT_THROW(
      Policy::from_json(
          nlohmann::json::parse(R"({"classes": {"uverbs": {"privileged": "allow"}}})"), "test"),
      Error);
}

TEST(RecordedTool, RulesNameControlsAndClassesOnlyTheGeneratedTablesHave) {
  // Names of controls and classes resolve through the generated tables of every release.
  const Policy p = Policy::from_json(nlohmann::json::parse(R"({"classes": {"nvidia": {"rules": [
      {"action": "deny", "control": "NV2080_CTRL_CMD_ECC_GET_UNREPAIRABLE_MEMORY_FLAG"},
      {"action": "deny", "class": "NV2082_BINAPI_PRIVILEGED"}]}}})"),
                                     "test");
  EXPECT_EQ(p.evaluate(rm_call(kNvEscRmControl, 0x20803406, std::nullopt, NvRequires::kAnyone))
                .reason.rfind("nvidia rule #0", 0),
            0u);
  EXPECT_EQ(p.evaluate(rm_call(kNvEscRmAlloc, std::nullopt, 0x2082, NvRequires::kAdmin))
                .reason.rfind("nvidia rule #1", 0),
            0u);
  EXPECT_THROW(
      Policy::from_json(nlohmann::json::parse(
                            R"({"classes": {"nvidia": {"rules": [{"control": "NV_NO_SUCH"}]}}})"),
                        "test"),
      Error);
}

TEST(RecordedTool, AWrongParamsSizeIsMalformed) {
  // NV2080_CTRL_CMD_GPU_GET_INFO_V2 with a parameter block one byte short.
  const NvidiaDriverAbi& abi = *nvidia_abi_for_version("580.159.04");
  const NvGenControl* info = abi.generated->find_control("NV2080_CTRL_CMD_GPU_GET_INFO_V2");
  ASSERT_NE(info, nullptr);
  ASSERT_GT(info->param_size, 1);
  uint8_t nvos54[32] = {};
  const uint32_t cmd = info->cmd, size = static_cast<uint32_t>(info->param_size) - 1;
  const uint64_t params = 0x20000;
  std::memcpy(nvos54 + 8, &cmd, 4);
  std::memcpy(nvos54 + 16, &params, 8);
  std::memcpy(nvos54 + 24, &size, 4);
  BufferMemory mem;
  mem.map(0x10000, std::vector<uint8_t>(nvos54, nvos54 + sizeof nvos54));
  DecodedCall c;
  decode_nvidia_frontend_ioctl(c, nv_escape_request(kNvEscRmControl, 32), 0x10000, mem, abi,
                               DecodeDepth::kPolicy);
  EXPECT_NE(c.malformed.find("paramsSize " + std::to_string(size) + " is not the " +
                             std::to_string(info->param_size) + " bytes"),
            std::string::npos)
      << c.malformed;
}

}  // namespace
}  // namespace gdrproxy::proxy
