// The calls real tools made on the GPU machine (driver 580.159.04, tests/fixtures/nvidia/),
// judged under every release the tables hold, as a node running that release judges them: each
// call is named by that release's tables, allowed by the default policy when that release
// answers it with the same sizes, refused by name when that release keeps it for administrators
// or does not answer it, and refused as malformed, naming the release, when its size is not the
// one that release fixes. Also: the choice of tables for releases the build has not seen.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "base/error.h"
#include "proxy/abi/nvidia_abi_choice.h"
#include "proxy/abi/nvidia_access.h"
#include "proxy/abi/nvidia_control_names.h"
#include "proxy/abi/nvidia_generated.h"
#include "proxy/decode/nvidia_decoder.h"
#include "proxy/policy/policy.h"
#include "tests/proxy/nvidia_capture.h"
#include "tests/proxy/nvidia_test_structs.h"

namespace gdrproxy::proxy {
namespace {

using testing::bytes_of;
using testing::nv_iowr;
using testing::Nvos54;
using testing::Nvos64;
using testing_capture::load;
using testing_capture::Record;

struct Counts {
  size_t calls = 0, allowed = 0, denied = 0, malformed = 0;
};

DecodedCall decode(const Record& r, const NvidiaDriverAbi& abi, DecodeDepth depth) {
  const BufferMemory mem = r.before();
  DecodedCall c;
  if (r.kind == 2)
    decode_nvidia_uvm_ioctl(c, r.cmd, r.arg, mem, abi, depth);
  else
    decode_nvidia_frontend_ioctl(c, r.cmd, r.arg, mem, abi, depth);
  return c;
}

// Judges every call of `file` under `abi`; every verdict is checked to say what it refuses.
Counts judge(const std::vector<Record>& recs, const NvidiaDriverAbi& abi, const Policy& policy) {
  Counts n;
  const std::string tables = " in " + std::string(abi.version) + "'s tables";
  for (const Record& r : recs) {
    const DecodedCall c = decode(r, abi, DecodeDepth::kPolicy);
    // The captures hold one level of parameters: a device object's deviceId is not in them.
    if (c.malformed.rfind("RM_ALLOC(NV01_DEVICE_0) parameters at ", 0) == 0) continue;
    ++n.calls;
    const Verdict v = policy.evaluate(c);
    if (!c.malformed.empty()) {
      ++n.malformed;
      EXPECT_NE(c.malformed.find(tables), std::string::npos) << c.malformed;
      EXPECT_EQ(v.action, Action::kDeny) << c.malformed;
      continue;
    }
    if (v.action == Action::kAllow) {
      ++n.allowed;
      continue;
    }
    ++n.denied;
    // A refusal is the release's: a call it does not name or answer, or one it keeps for an
    // administrator. Never an allowed call of the release refused for another reason.
    const bool privileged = c.keys.nv_needs && *c.keys.nv_needs != NvRequires::kAnyone &&
                            *c.keys.nv_needs != NvRequires::kNotTheDrivers;
    const bool unanswered =
        !c.keys.nv_named || (c.keys.nv_needs && *c.keys.nv_needs == NvRequires::kNotTheDrivers);
    EXPECT_TRUE(privileged || unanswered) << c.name << ": " << v.reason;
  }
  return n;
}

TEST(EveryRelease, RecordedToolsAreJudgedByEachReleasesTables) {
  const Policy policy = Policy::builtin_default();
  std::map<std::string, std::vector<Record>> fixtures;
  for (const char* f : {"nvidia-smi.nvcap.gz", "nvidia-smi-q.nvcap.gz", "nvml-sweep.nvcap.gz",
                        "cuda-dmabuf.nvcap.gz", "pytorch-matmul.nvcap.gz"})
    fixtures[f] = load(f);
  std::map<unsigned long, Counts> by_branch;
  for (const NvidiaDriverAbi* abi : nvidia_known_abis()) {
    SCOPED_TRACE(std::string(abi->version));
    for (const auto& [file, recs] : fixtures) {
      SCOPED_TRACE(file);
      const Counts n = judge(recs, *abi, policy);
      EXPECT_GT(n.allowed, n.calls / 2);
      Counts& b = by_branch[nvidia_version_key(abi->version).front()];
      b.calls += n.calls;
      b.allowed += n.allowed;
      b.denied += n.denied;
      b.malformed += n.malformed;
      // Every release of the branch the tools ran on has their structs: nothing malformed.
      // The release they ran on, and those after it, answer every call: nothing refused (the
      // earlier 580 releases do not export NV2080_CTRL_CMD_ECC_GET_UNREPAIRABLE_MEMORY_FLAG, and
      // refuse it as unknown, as their driver would answer NV_ERR_NOT_SUPPORTED).
      if (nvidia_version_key(abi->version).front() == 580) {
        EXPECT_EQ(n.malformed, 0u);
      }
      if (nvidia_version_key(abi->version) >= nvidia_version_key("580.159.04") &&
          nvidia_version_key(abi->version).front() == 580) {
        EXPECT_EQ(n.denied, 0u);
      }
    }
  }
  for (const auto& [branch, n] : by_branch)
    std::printf("branch %lu: %zu calls judged, %zu allowed, %zu denied, %zu malformed\n", branch,
                n.calls, n.allowed, n.denied, n.malformed);
}

// Every control nvidia-smi -q and NVML send is named under each release that answers it: by its
// exported name, its deprecated name, its SDK name, or the interface it is forwarded under.
TEST(EveryRelease, EveryAnsweredControlIsNamed) {
  std::vector<Record> recs = load("nvidia-smi-q.nvcap.gz");
  for (Record& r : load("nvml-sweep.nvcap.gz")) recs.push_back(std::move(r));
  for (const NvidiaDriverAbi* abi : nvidia_known_abis()) {
    SCOPED_TRACE(std::string(abi->version));
    for (const Record& r : recs) {
      if (r.kind == 2) continue;
      const DecodedCall c = decode(r, *abi, DecodeDepth::kPolicy);
      if (!c.keys.nv_control) continue;
      const uint32_t cmd = *c.keys.nv_control;
      if (nvidia_control_access(*abi->generated, cmd).route == NvRoute::kNone) continue;
      EXPECT_FALSE(nvidia_control_name(*abi, cmd).empty()) << std::hex << cmd;
    }
  }
  // Under the release they ran on, every one of them is answered and named.
  const NvidiaDriverAbi& own = *nvidia_abi_for_version("580.159.04");
  for (const Record& r : recs) {
    if (r.kind == 2) continue;
    const DecodedCall c = decode(r, own, DecodeDepth::kFull);
    for (const auto& a : c.args) EXPECT_EQ(a.value.find("unknown("), std::string::npos) << a.value;
    if (c.keys.nv_control) {
      EXPECT_EQ(nvidia_call_subject(c, own).find("unknown("), std::string::npos);
    }
  }
}

// Setting the power limit (recorded as root on the GPU machine) is an administrator's under
// every release that answers it, and refused by name: never allowed, never "unknown(".
TEST(EveryRelease, ThePrivilegedCallIsRefusedByNameUnderEveryRelease) {
  const Policy policy = Policy::builtin_default();
  const std::vector<Record> recs = load("nvidia-smi-pl.nvcap.gz");
  for (const NvidiaDriverAbi* abi : nvidia_known_abis()) {
    SCOPED_TRACE(std::string(abi->version));
    size_t refused = 0;
    for (const Record& r : recs) {
      const DecodedCall c = decode(r, *abi, DecodeDepth::kFull);
      if (c.keys.nv_control != 0x2080e61eu) continue;
      const Verdict v = policy.evaluate(c);
      EXPECT_EQ(v.action, Action::kDeny);
      const std::string subject = nvidia_call_subject(c, *abi);
      EXPECT_EQ(subject.find("unknown("), std::string::npos) << subject;
      EXPECT_NE(subject.find("PMGR_GSS_LEGACY_PRIVILEGED_MSG_1E(0x2080e61e)"), std::string::npos)
          << subject;
      EXPECT_EQ(v.reason, "nvidia privileged: the driver lets only an administrator make it");
      ++refused;
    }
    EXPECT_EQ(refused, 1u);
  }
}

TEST(EveryRelease, ForwardedControlsAreNamedByTheirInterface) {
  const NvidiaDriverAbi& abi = *nvidia_abi_for_version("580.159.04");
  EXPECT_EQ(nvidia_control_name(abi, 0x2080852e), "NV20_SUBDEVICE_0_THERMAL_GSS_LEGACY_MSG_2E");
  EXPECT_EQ(nvidia_control_name(abi, 0x2080e61e),
            "NV20_SUBDEVICE_0_PMGR_GSS_LEGACY_PRIVILEGED_MSG_1E");
  EXPECT_EQ(nvidia_control_name(abi, 0x20810110), "NV2081_BINAPI_MSG_10");
  // Named by the SDK outside the method tables.
  EXPECT_EQ(nvidia_control_name(abi, 0x20808513),
            "NV2080_CTRL_CMD_THERMAL_SYSTEM_EXECUTE_V2_PHYSICAL");
  // Neither exported nor forwarded: no name.
  EXPECT_EQ(nvidia_control_name(abi, 0x20800fff), "");
}

// A call whose size the release's tables fix, with another size, is malformed, naming the
// release: 580's RM_MAP_MEMORY_DMA (64 bytes) under 535's tables (56), and a control's
// paramsSize one byte short.
TEST(EveryRelease, ASizeTheTablesFixIsCheckedAndTheReleaseNamed) {
  const NvidiaDriverAbi& r535 = *nvidia_abi_for_version("535.43.02");
  BufferMemory mem;
  mem.map(0x10000, std::vector<uint8_t>(64, 0));
  DecodedCall c;
  decode_nvidia_frontend_ioctl(c, nv_escape_request(0x57, 64), 0x10000, mem, r535,
                               DecodeDepth::kPolicy);
  EXPECT_EQ(c.malformed,
            "RM_MAP_MEMORY_DMA size 64 is not sizeof its parameters 56 in 535.43.02's tables");
  EXPECT_EQ(Policy::builtin_default().evaluate(c).action, Action::kDeny);

  const NvidiaDriverAbi& r580 = *nvidia_abi_for_version("580.173.02");
  const NvGenControl* info = r580.generated->find_control("NV2080_CTRL_CMD_GPU_GET_INFO_V2");
  ASSERT_NE(info, nullptr);
  Nvos54 ctl{};
  ctl.cmd = info->cmd;
  ctl.paramsSize = static_cast<uint32_t>(info->param_size) - 1;
  BufferMemory m2;
  m2.map(0x10000, bytes_of(ctl));
  decode_nvidia_frontend_ioctl(c, nv_iowr(kNvEscRmControl, sizeof ctl), 0x10000, m2, r580,
                               DecodeDepth::kPolicy);
  EXPECT_NE(c.malformed.find("in 580.173.02's tables"), std::string::npos) << c.malformed;

  // An allocation's parameter size: NV01_DEVICE_0's is fixed; another is malformed.
  Nvos64 alloc{};
  alloc.hClass = kNvClassDevice;
  alloc.pAllocParms = 0x20000;
  alloc.paramsSize = 8;
  BufferMemory m3;
  m3.map(0x10000, bytes_of(alloc));
  m3.map(0x20000, std::vector<uint8_t>(64, 0));
  decode_nvidia_frontend_ioctl(c, nv_iowr(kNvEscRmAlloc, sizeof alloc), 0x10000, m3, r580,
                               DecodeDepth::kPolicy);
  EXPECT_EQ(c.malformed,
            "RM_ALLOC NV01_DEVICE_0(0x80) paramsSize 8 is not the 56 bytes of its parameters in "
            "580.173.02's tables");
}

// One ABI truth: an escape is known only when the session's release names it. 535 has no
// WAIT_OPEN_COMPLETE (218), which 580 answers; the same request is unknown (refused) under 535's
// tables and allowed under 580's, however the newest tables name it.
TEST(EveryRelease, AnEscapeIsKnownOnlyToTheReleasesThatHaveIt) {
  const Policy policy = Policy::builtin_default();
  BufferMemory mem;
  mem.map(0x10000, std::vector<uint8_t>(8, 0));
  DecodedCall c;
  const NvidiaDriverAbi& r535 = *nvidia_abi_for_version("535.43.02");
  ASSERT_EQ(r535.find_escape(uint8_t{kNvEscWaitOpenComplete}), nullptr);
  decode_nvidia_frontend_ioctl(c, nv_iowr(kNvEscWaitOpenComplete, 8), 0x10000, mem, r535,
                               DecodeDepth::kPolicy);
  Verdict v = policy.evaluate(c);
  EXPECT_EQ(v.action, Action::kDeny);
  EXPECT_NE(v.reason.find("unknown"), std::string::npos) << v.reason;
  const NvidiaDriverAbi& r580 = *nvidia_abi_for_version("580.159.04");
  decode_nvidia_frontend_ioctl(c, nv_iowr(kNvEscWaitOpenComplete, 8), 0x10000, mem, r580,
                               DecodeDepth::kPolicy);
  EXPECT_EQ(policy.evaluate(c).action, Action::kAllow);
}

TEST(NvidiaAbiChoice, ExactReleases) {
  for (const NvidiaDriverAbi* abi : nvidia_known_abis()) {
    const NvidiaAbiChoice c = choose_nvidia_abi(std::string(abi->version), std::nullopt);
    EXPECT_EQ(c.match, NvAbiMatch::kExact) << abi->version;
    EXPECT_EQ(c.abi, abi);
    EXPECT_TRUE(c.notice.empty());
  }
}

TEST(NvidiaAbiChoice, ALaterPatchTakesItsBranchsNearestLowerRelease) {
  struct Case {
    const char* driver;
    const char* tables;
  };
  for (const Case& k : {Case{"580.178.04", "580.173.02"}, Case{"580.100.01", "580.95.05"},
                        Case{"535.288.02", "535.288.01"}, Case{"595.71.05", "595.45.04"},
                        Case{"570.300.01", "570.211.01"}}) {
    const NvidiaAbiChoice c = choose_nvidia_abi(std::string(k.driver), std::nullopt);
    EXPECT_EQ(c.match, NvAbiMatch::kNearestPatch) << k.driver;
    ASSERT_NE(c.abi, nullptr) << k.driver;
    EXPECT_EQ(c.abi->version, k.tables) << k.driver;
    EXPECT_NE(c.notice.find(std::string("NVIDIA driver ") + k.driver +
                            " is not in this build's tables: enforcing with " + k.tables + "'s"),
              std::string::npos)
        << c.notice;
  }
}

TEST(NvidiaAbiChoice, AnUncoveredBranchHasNoTablesUnlessNamed) {
  for (const char* v : {"610.57.04", "580.1.01", "530.30.02", "1.0"}) {
    const NvidiaAbiChoice c = choose_nvidia_abi(std::string(v), std::nullopt);
    EXPECT_EQ(c.match, NvAbiMatch::kUncovered) << v;
    EXPECT_EQ(c.abi, nullptr) << v;
    EXPECT_NE(c.naming, nullptr) << v;  // trace-only still names calls
  }
  EXPECT_EQ(choose_nvidia_abi(std::string("610.57.04"), std::nullopt).naming->version,
            nvidia_newest_release());
  const NvidiaAbiChoice named =
      choose_nvidia_abi(std::string("610.57.04"), std::string("595.45.04"));
  EXPECT_EQ(named.match, NvAbiMatch::kNamed);
  EXPECT_EQ(named.abi->version, "595.45.04");
  EXPECT_NE(named.notice.find("as the operator named them"), std::string::npos);
  // Naming the driver's own release is the exact choice.
  EXPECT_EQ(choose_nvidia_abi(std::string("580.159.04"), std::string("580.159.04")).match,
            NvAbiMatch::kExact);
  EXPECT_THROW(choose_nvidia_abi(std::string("610.57.04"), std::string("610.57.04")), Error);
  EXPECT_EQ(choose_nvidia_abi(std::nullopt, std::nullopt).match, NvAbiMatch::kNoVersion);
  EXPECT_EQ(nvidia_covered_branches(), "535, 550, 570, 575, 580, 590, 595");
}

}  // namespace
}  // namespace gdrproxy::proxy
