// Tests of the NVIDIA tables generated from the driver's source (proxy/abi/generated/): every
// covered release loads as its parent plus its patch into sorted, named tables; controls decode
// by name with the release's own flag bits; the numbers the open source does not export are
// named by their class and said to be unexported; traces and refusal lines use these names.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "proxy/abi/nvidia_abi.h"
#include "proxy/abi/nvidia_generated.h"
#include "proxy/decode/nvidia_decoder.h"
#include "tests/proxy/nvidia_test_structs.h"

namespace gdrproxy::proxy {
namespace {

using namespace testing;  // NOLINT: the struct mirrors

const NvGenTables& gen(std::string_view version) {
  const NvGenTables* t = nvidia_generated_for_version(version);
  if (!t) throw std::runtime_error("no generated tables for " + std::string(version));
  return *t;
}

template <typename T, typename Key>
void expect_sorted_named(std::span<const T* const> table, Key key, const char* what) {
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_NE(table[i]->name, nullptr);
    EXPECT_FALSE(std::string(table[i]->name).empty()) << what;
    if (i > 0) {
      EXPECT_LT(key(*table[i - 1]), key(*table[i])) << what << " at " << table[i]->name;
    }
  }
}

TEST(NvidiaGenerated, EveryCoveredReleaseLoads) {
  const auto releases = nvidia_generated_releases();
  ASSERT_GE(releases.size(), 100u);
  std::set<std::string> seen;
  for (const NvGenTables* t : releases) {
    SCOPED_TRACE(std::string(t->version));
    EXPECT_TRUE(seen.insert(std::string(t->version)).second);
    if (!t->parent.empty()) {
      EXPECT_TRUE(seen.count(std::string(t->parent))) << "parent listed after its child";
    }
    EXPECT_GT(t->controls().size(), 1000u);
    EXPECT_GT(t->classes().size(), 100u);
    EXPECT_GT(t->uvm_ioctls().size(), 50u);
    EXPECT_GT(t->control_flag_bits().size(), 10u);
    EXPECT_GT(t->class_flag_bits().size(), 10u);
    expect_sorted_named(
        t->controls(), [](const NvGenControl& c) { return c.cmd; }, "control");
    expect_sorted_named(
        t->classes(), [](const NvGenClass& c) { return c.id; }, "class");
    expect_sorted_named(
        t->escapes(), [](const NvGenEscape& e) { return e.nr; }, "escape");
    expect_sorted_named(
        t->uvm_ioctls(), [](const NvGenUvmIoctl& u) { return u.cmd; }, "uvm");
    // Facts every release shares: the RM escapes' sizes and the UVM handshake.
    const NvGenEscape* ctl = t->find_escape(kNvEscRmControl);
    ASSERT_NE(ctl, nullptr);
    EXPECT_STREQ(ctl->name, "RM_CONTROL");
    EXPECT_EQ(ctl->param_size, 32);  // NVOS54_PARAMETERS
    const NvGenEscape* alloc = t->find_escape(kNvEscRmAlloc);
    ASSERT_NE(alloc, nullptr);
    EXPECT_EQ(alloc->param_size, 32);      // NVOS21_PARAMETERS
    EXPECT_EQ(alloc->alt_param_size, 48);  // NVOS64_PARAMETERS
    const NvGenUvmIoctl* init = t->find_uvm(0x30000001);
    ASSERT_NE(init, nullptr);
    EXPECT_STREQ(init->name, "UVM_INITIALIZE");
    const NvGenClass* root = t->find_class(kNvClassRootClient);
    ASSERT_NE(root, nullptr);
    EXPECT_STREQ(root->name, "NV01_ROOT_CLIENT");
    EXPECT_STREQ(root->nvoc_class, "RmClientResource");
    const NvGenControl* id_info = t->find_control(kNvCtrlGpuGetIdInfoV2);
    ASSERT_NE(id_info, nullptr);
    EXPECT_STREQ(id_info->name, "NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2");
    EXPECT_TRUE(t->control_has(id_info->flags, "NON_PRIVILEGED"));
  }
}

TEST(NvidiaGenerated, CoversEveryBranchAndTheGpuMachinesDriver) {
  for (const char* v :
       {"535.43.02", "535.288.01", "550.40.07", "550.163.01", "570.86.15", "570.211.01",
        "575.51.02", "575.64.05", "580.65.06", "580.142", "590.48.01", "595.45.04"}) {
    const NvGenTables* t = nvidia_generated_for_version(v);
    ASSERT_NE(t, nullptr) << v;
    EXPECT_EQ(t->source_tag, v);
  }
  // 580.159.04 has no tag in the source: its tables are those of the newest 580 tag, plus the
  // controls and classes of the newest tag that one lacks.
  EXPECT_EQ(gen("580.159.04").source_tag, "580.142+595.45.04");
  EXPECT_EQ(nvidia_generated_for_version("1.2.3"), nullptr);
  // The hand-written release carries the generated tables of the same version.
  EXPECT_EQ(nvidia_abi_for_version("580.159.04")->generated, &gen("580.159.04"));
}

TEST(NvidiaGenerated, ControlsDecodeByNameWithTheirReleasesFlags) {
  const NvGenTables& t = gen("580.159.04");
  const NvGenControl* info = t.find_control(0x20800102);
  ASSERT_NE(info, nullptr);
  EXPECT_STREQ(info->name, "NV2080_CTRL_CMD_GPU_GET_INFO_V2");
  EXPECT_STREQ(info->nvoc_class, "Subdevice");
  EXPECT_EQ(info->param_size, 564);
  EXPECT_TRUE(t.control_has(info->flags, "NON_PRIVILEGED"));
  EXPECT_FALSE(t.control_has(info->flags, "PRIVILEGED"));
  EXPECT_FALSE(t.control_has(info->flags, "INTERNAL"));
  EXPECT_EQ(t.find_control("NV2080_CTRL_CMD_GPU_GET_INFO_V2"), info);

  const NvGenControl* internal = t.find_control(0x20800a36);
  ASSERT_NE(internal, nullptr);
  EXPECT_STREQ(internal->name, "NV2080_CTRL_CMD_INTERNAL_GPU_GET_CHIP_INFO");
  EXPECT_TRUE(t.control_has(internal->flags, "INTERNAL"));
  EXPECT_NE(t.control_flags(internal->flags).find("INTERNAL"), std::string::npos);

  // The same control's flag bits moved between branches: each release decodes its own.
  const NvGenTables& old = gen("535.43.02");
  const NvGenControl* old_info = old.find_control(0x20800102);
  ASSERT_NE(old_info, nullptr);
  EXPECT_NE(old_info->flags, info->flags);
  EXPECT_TRUE(old.control_has(old_info->flags, "NON_PRIVILEGED"));
  EXPECT_EQ(old_info->param_size, 516);

  // Classes: allocation parameters and RS flags.
  const NvGenClass* dev = t.find_class(kNvClassDevice);
  ASSERT_NE(dev, nullptr);
  EXPECT_STREQ(dev->name, "NV01_DEVICE_0");
  EXPECT_STREQ(dev->nvoc_class, "Device");
  EXPECT_EQ(dev->param_size, 56);  // NV0080_ALLOC_PARAMETERS
  EXPECT_EQ(dev->params, static_cast<uint8_t>(NvGenParams::kOptional));
  EXPECT_TRUE(t.class_has(dev->rs_flags, "ALLOC_NON_PRIVILEGED"));
}

DecodedCall control_call(uint32_t cmd) {
  DecodedCall c;
  c.keys.nv_escape = kNvEscRmControl;
  c.keys.nv_control = cmd;
  return c;
}

TEST(NvidiaGenerated, UnexportedControlsAreNamedByTheirClassAndRoute) {
  // nvidia-smi's power and ECC queries and the binary-API controls: the open source exports
  // none of them. The driver forwards them to the GPU firmware (the GSS legacy bit, or a
  // binary-API class's command); the subject says so, and a number it neither exports nor
  // forwards is said to be neither.
  const NvidiaDriverAbi& abi = *nvidia_abi_for_version("580.159.04");
  const NvGenTables& t = *abi.generated;
  for (uint32_t cmd : {0x2080a618u, 0x2080852eu}) {
    EXPECT_EQ(t.find_control(cmd), nullptr) << std::hex << cmd;
    EXPECT_NE(nvidia_call_subject(control_call(cmd), abi)
                  .find("[class NV20_SUBDEVICE_0, forwarded to the GPU firmware (GSS legacy bit "
                        "0x8000)]"),
              std::string::npos);
  }
  for (uint32_t cmd : {0x20810110u, 0x20810111u}) {
    EXPECT_EQ(t.find_control(cmd), nullptr);
    const NvGenClass* cls = nvidia_generated_class_of_control(t, cmd);
    ASSERT_NE(cls, nullptr);
    EXPECT_STREQ(cls->name, "NV2081_BINAPI");
    EXPECT_STREQ(cls->nvoc_class, "BinaryApi");
    EXPECT_TRUE(t.class_has(cls->rs_flags, "ALLOC_NON_PRIVILEGED"));
  }
  EXPECT_EQ(nvidia_call_subject(control_call(0x20810110), abi),
            "cmd=unknown(0x20810110) [class NV2081_BINAPI, forwarded to the GPU firmware from a "
            "binary-API object]");
  EXPECT_EQ(nvidia_call_subject(control_call(0x20803499), abi),
            "cmd=unknown(0x20803499) [class NV20_SUBDEVICE_0, neither exported nor forwarded by "
            "driver 580.159.04]");
}

TEST(NvidiaGenerated, RefusalSubjectAndTraceNameAGeneratedControl) {
  const NvidiaDriverAbi& abi = *nvidia_abi_for_version("580.159.04");
  // A control the hand-written tables lack but the driver exports.
  ASSERT_EQ(abi.find_control(0x20800a36), nullptr);
  EXPECT_EQ(
      nvidia_call_subject(control_call(0x20800a36), abi)
          .rfind("cmd=NV2080_CTRL_CMD_INTERNAL_GPU_GET_CHIP_INFO(0x20800a36) [Subdevice, params ",
                 0),
      0u);
  BufferMemory mem;
  Nvos54 ctl{};
  ctl.cmd = 0x20800a36;
  mem.map(0x7f0000001000, bytes_of(ctl));
  const DecodedCall c =
      decode_nvidia_frontend_ioctl(nv_iowr(kNvEscRmControl, sizeof ctl), 0x7f0000001000, mem, abi);
  bool named = false;
  for (const auto& f : c.args)
    named = named || (f.name == "cmd" &&
                      f.value == "NV2080_CTRL_CMD_INTERNAL_GPU_GET_CHIP_INFO(0x20800a36)");
  EXPECT_TRUE(named);
  DecodedCall alloc;
  alloc.keys.nv_escape = kNvEscRmAlloc;
  alloc.keys.nv_class = kNvClassDevice;
  EXPECT_EQ(nvidia_call_subject(alloc, abi)
                .rfind("hClass=NV01_DEVICE_0(0x0080) [Device, params 56 bytes, flags ", 0),
            0u);
}

TEST(NvidiaGenerated, HandWrittenControlsAreAmongTheDriversOwn) {
  // The hand-written 580 tables were written from the same headers: a control they name that
  // the source exports has the same name there, unless the SDK headers define no name for it
  // (then the generated name is the driver's handler, e.g. subdeviceCtrlCmdGpu...).
  const NvidiaDriverAbi& abi = *nvidia_abi_for_version("580.142");
  const NvGenTables& t = *abi.generated;
  size_t found = 0;
  for (const NvControl& c : abi.controls) {
    const NvGenControl* g = t.find_control(c.cmd);
    if (!g) continue;
    ++found;
    if (std::string_view(g->name).starts_with("NV")) {
      EXPECT_STREQ(g->name, c.name) << std::hex << c.cmd;
    }
  }
  EXPECT_GT(found, abi.controls.size() / 2);

  // Sizes: where both sides know one, the hand-written escape and UVM sizes are among those the
  // driver's handlers check.
  size_t sized = 0;
  for (const NvEscape& e : abi.escapes) {
    const NvGenEscape* g = t.find_escape(e.nr);
    ASSERT_NE(g, nullptr) << e.name;
    if (!e.param_size || !g->param_size) continue;
    ++sized;
    EXPECT_TRUE(g->param_size == e.param_size || g->alt_param_size == e.param_size) << e.name;
  }
  EXPECT_GE(sized, 20u);
  for (const NvUvmIoctl& u : abi.uvm_ioctls) {
    const NvGenUvmIoctl* g = t.find_uvm(u.cmd);
    ASSERT_NE(g, nullptr) << u.name;
    EXPECT_STREQ(g->name, u.name);
    if (u.param_size && g->param_size > 0) {
      EXPECT_EQ(g->param_size, u.param_size) << u.name;
    }
  }
}

}  // namespace
}  // namespace gdrproxy::proxy
