// Who the driver lets make each RM call, read from the generated tables (nvidia_access.h): the
// RMCTRL and RS flags, the deprecated commands, the GSS legacy forward and the binary-API
// classes, for every covered release and for the 580.159.04 the GPU machine runs.
#include "proxy/abi/nvidia_access.h"

#include <gtest/gtest.h>

#include "proxy/abi/nvidia_abi.h"
#include "proxy/abi/nvidia_generated.h"

namespace gdrproxy::proxy {
namespace {

const NvGenTables& tables(const char* version) {
  const NvGenTables* t = nvidia_generated_for_version(version);
  EXPECT_NE(t, nullptr) << version;
  return t ? *t : nvidia_generated_newest();
}

TEST(NvidiaAccess, EveryReleaseHasItsDispatchFacts) {
  for (const NvGenTables* t : nvidia_generated_releases()) {
    SCOPED_TRACE(std::string(t->version));
    EXPECT_EQ(t->gss_legacy_mask(), 0x8000u);
    EXPECT_EQ(t->gss_privileged_mask(), 0xc000u);
    // NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION becomes its _V2, which anyone may call.
    const NvControlAccess build = nvidia_control_access(*t, 0x101);
    EXPECT_EQ(build.route, NvRoute::kDeprecated);
    ASSERT_NE(build.control, nullptr);
    EXPECT_STREQ(build.control->name, "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2");
    EXPECT_EQ(build.needs, NvRequires::kAnyone);
    // Clients, device and subdevice objects and video memory are anyone's to allocate.
    for (uint32_t cls : {0x0u, 0x1u, 0x41u, 0x80u, 0x2080u, 0x40u})
      EXPECT_EQ(nvidia_class_access(*t, cls), NvRequires::kAnyone) << std::hex << cls;
    EXPECT_EQ(nvidia_class_access(*t, 0x2082), NvRequires::kAdmin);
    // Every exported control is someone's: the flags say whose.
    size_t anyone = 0, other = 0;
    for (const NvGenControl* c : t->controls()) {
      const NvControlAccess a = nvidia_control_access(*t, c->cmd);
      EXPECT_NE(a.needs, NvRequires::kNotTheDrivers) << std::hex << c->cmd;
      (a.needs == NvRequires::kAnyone ? anyone : other)++;
    }
    EXPECT_GT(anyone, 300u);
    EXPECT_GT(other, 100u);
  }
}

TEST(NvidiaAccess, FlagsDecideWhoMayCallAnExportedControl) {
  const NvGenTables& t = tables("580.159.04");
  for (const NvGenControl* c : t.controls()) {
    const NvRequires n = nvidia_control_access(t, c->cmd).needs;
    if (t.control_has(c->flags, "INTERNAL")) {
      EXPECT_EQ(n, NvRequires::kInternal) << c->name;
    } else if (t.control_has(c->flags, "PRIVILEGED")) {
      EXPECT_EQ(n, NvRequires::kAdmin) << c->name;
    } else if (t.control_has(c->flags, "NON_PRIVILEGED")) {
      EXPECT_EQ(n, NvRequires::kAnyone) << c->name;
    } else {
      EXPECT_EQ(n, NvRequires::kKernel) << c->name;
    }
  }
  const NvGenControl* chip = t.find_control("NV2080_CTRL_CMD_INTERNAL_GPU_GET_CHIP_INFO");
  ASSERT_NE(chip, nullptr);
  EXPECT_EQ(nvidia_control_access(t, chip->cmd).needs, NvRequires::kInternal);
}

TEST(NvidiaAccess, UnexportedCommandsAreForwardedOrNotTheDrivers) {
  const NvGenTables& t = tables("580.159.04");
  // nvidia-smi's power and thermal readings: the GSS legacy bit, forwarded to the firmware.
  for (uint32_t cmd : {0x2080a618u, 0x2080852eu, 0x20809064u}) {
    ASSERT_EQ(t.find_control(cmd), nullptr);
    const NvControlAccess a = nvidia_control_access(t, cmd);
    EXPECT_EQ(a.route, NvRoute::kFirmwareGss) << std::hex << cmd;
    EXPECT_EQ(a.needs, NvRequires::kAnyone);
  }
  // nvidia-smi -pl: the privileged bits too.
  const NvControlAccess pl = nvidia_control_access(t, 0x2080e61e);
  EXPECT_EQ(pl.route, NvRoute::kFirmwareGss);
  EXPECT_EQ(pl.needs, NvRequires::kAdmin);
  EXPECT_EQ(nv_route_text(t, 0x2080e61e, pl),
            "forwarded to the GPU firmware (GSS legacy bit 0x8000, privileged bits 0xc000)");
  // The binary-API classes' own commands.
  EXPECT_EQ(nvidia_control_access(t, 0x20810110).route, NvRoute::kFirmwareBinapi);
  EXPECT_EQ(nvidia_control_access(t, 0x20810110).needs, NvRequires::kAnyone);
  EXPECT_EQ(nvidia_control_access(t, 0x20820001).needs, NvRequires::kAdmin);
  // Neither exported, deprecated, GSS nor binary API: the driver answers NOT_SUPPORTED.
  EXPECT_EQ(nvidia_control_access(t, 0x20803499).needs, NvRequires::kNotTheDrivers);
  EXPECT_EQ(nvidia_control_access(t, 0x00001234).needs, NvRequires::kNotTheDrivers);
}

TEST(NvidiaAccess, AReleaseWithoutATagTakesTheNewerBranchesControls) {
  // 580.159.04 answers NV2080_CTRL_CMD_ECC_GET_UNREPAIRABLE_MEMORY_FLAG on a subdevice (nvidia-smi
  // -q reads it); 580.142, the newest 580 tag, exports no such control.
  const NvGenTables& t = tables("580.159.04");
  EXPECT_EQ(t.source_tag, "580.142+595.45.04");
  const NvControlAccess ecc = nvidia_control_access(t, 0x20803406);
  ASSERT_NE(ecc.control, nullptr);
  EXPECT_STREQ(ecc.control->name, "NV2080_CTRL_CMD_ECC_GET_UNREPAIRABLE_MEMORY_FLAG");
  EXPECT_EQ(ecc.needs, NvRequires::kAnyone);
  EXPECT_EQ(nvidia_control_access(tables("580.142"), 0x20803406).needs, NvRequires::kNotTheDrivers);
}

TEST(NvidiaAccess, ClassesWithSeveralParentsKeepTheirFlags) {
  // NV01_MEMORY_LOCAL_USER lists two parents (RS_LIST(classId(Device), classId(Subdevice))):
  // its allocation parameters and RS flags are those after them, not shifted by one.
  for (const NvGenTables* t : nvidia_generated_releases()) {
    const NvGenClass* c = t->find_class(0x40);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->params, static_cast<uint8_t>(NvGenParams::kRequired)) << t->version;
    EXPECT_GT(c->param_size, 0) << t->version;
    EXPECT_TRUE(t->class_has(c->rs_flags, "ALLOC_NON_PRIVILEGED")) << t->version;
  }
}

}  // namespace
}  // namespace gdrproxy::proxy
