// Tests of the NVIDIA tables generated from the driver's source (proxy/abi/generated/): every
// covered release loads as its parent plus its patch into sorted, named tables; controls decode
// by name with the release's own flag bits; the numbers the open source does not export are
// named by their class and said to be unexported; traces and refusal lines use these names;
// every escape's and UVM ioctl's parameter struct has a layout whose size is the size the
// driver checks and whose status member lies inside it.
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
    EXPECT_EQ(alloc->param_size, 48);      // NVOS64_PARAMETERS
    EXPECT_EQ(alloc->alt_param_size, 32);  // NVOS21_PARAMETERS
    EXPECT_STREQ(alloc->record, "NVOS64_PARAMETERS");
    EXPECT_STREQ(alloc->alt_record, "NVOS21_PARAMETERS");
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
            "cmd=NV2081_BINAPI_MSG_10(0x20810110) [class NV2081_BINAPI, forwarded to the GPU "
            "firmware from a binary-API object]");
  EXPECT_EQ(nvidia_call_subject(control_call(0x20803499), abi),
            "cmd=unknown(0x20803499) [class NV20_SUBDEVICE_0, neither exported nor forwarded by "
            "driver 580.159.04]");
}

TEST(NvidiaGenerated, RefusalSubjectAndTraceNameAGeneratedControl) {
  const NvidiaDriverAbi& abi = *nvidia_abi_for_version("580.159.04");
  // An internal control the driver exports (the tools never send it).
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

// The facts of driver 580.159.04 as its headers give them (nv-ioctl-numbers.h, nv_escape.h,
// nv-ioctl.h, nvos.h, uvm_ioctl.h; x86-64): what the generated tables must say of it.
struct EscapeFact {
  uint8_t nr;
  const char* name;
  uint16_t param_size, alt_param_size, elem_size;
  int16_t status_offset;
};
constexpr EscapeFact k580Escapes[] = {
    {0x27, "RM_ALLOC_MEMORY", 56, 0, 0, 40},
    {0x28, "RM_ALLOC_OBJECT", 20, 0, 0, 16},
    {0x29, "RM_FREE", 16, 0, 0, 12},
    {0x2a, "RM_CONTROL", 32, 0, 0, 28},
    {0x2b, "RM_ALLOC", 48, 32, 0, 40},
    {0x34, "RM_DUP_OBJECT", 28, 0, 0, 24},
    {0x35, "RM_SHARE", 24, 0, 0, 20},
    {0x39, "RM_I2C_ACCESS", 32, 0, 0, 24},
    {0x41, "RM_IDLE_CHANNELS", 56, 0, 0, 48},
    {0x4a, "RM_VID_HEAP_CONTROL", 184, 0, 0, 20},
    {0x4d, "RM_ACCESS_REGISTRY", 72, 0, 0, 64},
    {0x4e, "RM_MAP_MEMORY", 56, 0, 0, 40},
    {0x4f, "RM_UNMAP_MEMORY", 32, 0, 0, 24},
    {0x52, "RM_GET_EVENT_DATA", 16, 0, 0, 12},
    {0x54, "RM_ALLOC_CONTEXT_DMA2", 56, 0, 0, 48},
    {0x57, "RM_MAP_MEMORY_DMA", 64, 0, 0, 56},
    {0x58, "RM_UNMAP_MEMORY_DMA", 48, 0, 0, 40},
    {0x59, "RM_BIND_CONTEXT_DMA", 16, 0, 0, 12},
    {0x5e, "RM_UPDATE_DEVICE_MAPPING_INFO", 40, 0, 0, 32},
    {0x5f, "RM_LOCKLESS_DIAGNOSTIC", 15412, 0, 0, 4},
    {200, "CARD_INFO", 0, 0, 72, -1},
    {201, "REGISTER_FD", 4, 0, 0, -1},
    {206, "ALLOC_OS_EVENT", 16, 0, 0, 12},
    {207, "FREE_OS_EVENT", 16, 0, 0, 12},
    {209, "STATUS_CODE", 12, 0, 0, 8},
    {210, "CHECK_VERSION_STR", 72, 0, 0, -1},
    {211, "IOCTL_XFER_CMD", 16, 0, 0, -1},
    {212, "ATTACH_GPUS_TO_FD", 0, 0, 4, -1},
    {213, "QUERY_DEVICE_INTR", 8, 0, 0, 4},
    {214, "SYS_PARAMS", 8, 0, 0, -1},
    {215, "NUMA_INFO", 560, 0, 0, -1},
    {216, "SET_NUMA_STATUS", 4, 0, 0, -1},
    {217, "EXPORT_TO_DMABUF_FD", 2608, 0, 0, 2600},
    {218, "WAIT_OPEN_COMPLETE", 8, 0, 0, 4},
};

struct UvmFact {
  uint32_t cmd;
  const char* name;
  int32_t param_size, status_offset;
};
constexpr UvmFact k580Uvm[] = {
    {1, "UVM_RESERVE_VA", 24, 16},
    {2, "UVM_RELEASE_VA", 24, 16},
    {3, "UVM_REGION_COMMIT", 48, 40},
    {4, "UVM_REGION_DECOMMIT", 24, 16},
    {5, "UVM_REGION_SET_STREAM", 48, 40},
    {6, "UVM_SET_STREAM_RUNNING", 16, 8},
    {7, "UVM_SET_STREAM_STOPPED", 272, 264},
    {9, "UVM_RUN_TEST", 44, 40},
    {10, "UVM_ADD_SESSION", 24, 20},
    {11, "UVM_REMOVE_SESSION", 8, 4},
    {12, "UVM_ENABLE_COUNTERS", 908, 904},
    {13, "UVM_MAP_COUNTER", 48, 40},
    {14, "UVM_CREATE_EVENT_QUEUE", 32, 28},
    {15, "UVM_REMOVE_EVENT_QUEUE", 12, 8},
    {16, "UVM_MAP_EVENT_QUEUE", 56, 48},
    {17, "UVM_EVENT_CTRL", 20, 16},
    {18, "UVM_REGISTER_MPS_SERVER", 536, 528},
    {19, "UVM_REGISTER_MPS_CLIENT", 16, 8},
    {20, "UVM_GET_GPU_UUID_TABLE", 520, 516},
    {23, "UVM_CREATE_RANGE_GROUP", 16, 8},
    {24, "UVM_DESTROY_RANGE_GROUP", 16, 8},
    {25, "UVM_REGISTER_GPU_VASPACE", 32, 28},
    {26, "UVM_UNREGISTER_GPU_VASPACE", 20, 16},
    {27, "UVM_REGISTER_CHANNEL", 56, 48},
    {28, "UVM_UNREGISTER_CHANNEL", 28, 24},
    {29, "UVM_ENABLE_PEER_ACCESS", 36, 32},
    {30, "UVM_DISABLE_PEER_ACCESS", 36, 32},
    {31, "UVM_SET_RANGE_GROUP", 32, 24},
    {33, "UVM_MAP_EXTERNAL_ALLOCATION", 9264, 9260},
    {34, "UVM_FREE", 24, 16},
    {35, "UVM_MEM_MAP", 24, 16},
    {37, "UVM_REGISTER_GPU", 40, 36},
    {38, "UVM_UNREGISTER_GPU", 20, 16},
    {39, "UVM_PAGEABLE_MEM_ACCESS", 8, 4},
    {40, "UVM_PREVENT_MIGRATION_RANGE_GROUPS", 272, 264},
    {41, "UVM_ALLOW_MIGRATION_RANGE_GROUPS", 272, 264},
    {42, "UVM_SET_PREFERRED_LOCATION", 40, 36},
    {43, "UVM_UNSET_PREFERRED_LOCATION", 24, 16},
    {44, "UVM_ENABLE_READ_DUPLICATION", 24, 16},
    {45, "UVM_DISABLE_READ_DUPLICATION", 24, 16},
    {46, "UVM_SET_ACCESSED_BY", 40, 32},
    {47, "UVM_UNSET_ACCESSED_BY", 40, 32},
    {51, "UVM_MIGRATE", 80, 72},
    {53, "UVM_MIGRATE_RANGE_GROUP", 32, 24},
    {54, "UVM_ENABLE_SYSTEM_WIDE_ATOMICS", 20, 16},
    {55, "UVM_DISABLE_SYSTEM_WIDE_ATOMICS", 20, 16},
    {56, "UVM_TOOLS_INIT_EVENT_TRACKER", 56, 48},
    {57, "UVM_TOOLS_SET_NOTIFICATION_THRESHOLD", 8, 4},
    {58, "UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS", 16, 8},
    {59, "UVM_TOOLS_EVENT_QUEUE_DISABLE_EVENTS", 16, 8},
    {60, "UVM_TOOLS_ENABLE_COUNTERS", 16, 8},
    {61, "UVM_TOOLS_DISABLE_COUNTERS", 16, 8},
    {62, "UVM_TOOLS_READ_PROCESS_MEMORY", 40, 32},
    {63, "UVM_TOOLS_WRITE_PROCESS_MEMORY", 40, 32},
    {64, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE", 16, 8},
    {65, "UVM_MAP_DYNAMIC_PARALLELISM_REGION", 40, 32},
    {66, "UVM_UNMAP_EXTERNAL", 40, 32},
    {67, "UVM_TOOLS_FLUSH_EVENTS", 4, 0},
    {68, "UVM_ALLOC_SEMAPHORE_POOL", 9248, 9240},
    {69, "UVM_CLEAN_UP_ZOMBIE_RESOURCES", 4, 0},
    {70, "UVM_PAGEABLE_MEM_ACCESS_ON_GPU", 24, 20},
    {71, "UVM_POPULATE_PAGEABLE", 24, 20},
    {72, "UVM_VALIDATE_VA_RANGE", 24, 16},
    {73, "UVM_CREATE_EXTERNAL_RANGE", 24, 16},
    {74, "UVM_MAP_EXTERNAL_SPARSE", 40, 32},
    {75, "UVM_MM_INITIALIZE", 8, 4},
    {76, "UVM_TOOLS_INIT_EVENT_TRACKER_V2", 56, 48},
    {77, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE_V2", 16, 8},
    {78, "UVM_ALLOC_DEVICE_P2P", 56, 52},
    {79, "UVM_CLEAR_ALL_ACCESS_COUNTERS", 4, 0},
    {80, "UVM_DISCARD", 32, 24},
    {2047, "UVM_IS_8_SUPPORTED", 8, 4},
    {0x30000001, "UVM_INITIALIZE", 16, 8},
    {0x30000002, "UVM_DEINITIALIZE", 0, -1},
};

TEST(NvidiaGenerated, EscapesAndUvmOf580MatchTheDriversFacts) {
  const NvGenTables& t = gen("580.159.04");
  for (const EscapeFact& f : k580Escapes) {
    SCOPED_TRACE(f.name);
    const NvGenEscape* e = t.find_escape(f.nr);
    ASSERT_NE(e, nullptr);
    EXPECT_STREQ(e->name, f.name);
    EXPECT_EQ(e->param_size, f.param_size);
    EXPECT_EQ(e->alt_param_size, f.alt_param_size);
    EXPECT_EQ(e->elem_size, f.elem_size);
    EXPECT_EQ(e->status_offset, f.status_offset);
  }
  EXPECT_STREQ(t.find_escape(0xd2)->record, "nv_ioctl_rm_api_version_t");
  EXPECT_STREQ(t.find_escape(200)->record, "nv_ioctl_card_info_t");
  const NvGenEscape* alloc = t.find_escape(kNvEscRmAlloc);
  EXPECT_EQ(alloc->alt_status_offset, 28);  // NVOS21_PARAMETERS.status
  for (const UvmFact& f : k580Uvm) {
    SCOPED_TRACE(f.name);
    const NvGenUvmIoctl* u = t.find_uvm(f.cmd);
    ASSERT_NE(u, nullptr);
    EXPECT_STREQ(u->name, f.name);
    EXPECT_EQ(u->param_size, f.param_size);
    EXPECT_EQ(u->status_offset, f.status_offset);
  }
}

TEST(NvidiaGenerated, EveryReleasesParameterStructsHaveTheirCheckedSizes) {
  for (const NvGenTables* t : nvidia_generated_releases()) {
    SCOPED_TRACE(std::string(t->version));
    size_t with_record = 0;
    for (const NvGenEscape* e : t->escapes()) {
      SCOPED_TRACE(e->name);
      EXPECT_FALSE(e->param_size && e->elem_size) << "one struct or an array, not both";
      if (*e->record) {
        ++with_record;
        const NvGenRecord* r = t->find_record(e->record);
        ASSERT_NE(r, nullptr);
        EXPECT_EQ(r->size, e->elem_size ? e->elem_size : e->param_size);
      } else {
        EXPECT_EQ(e->status_offset, -1);
      }
      if (e->status_offset >= 0) {
        EXPECT_LE(e->status_offset + 4, e->param_size);
      }
      if (*e->alt_record) {
        const NvGenRecord* r = t->find_record(e->alt_record);
        ASSERT_NE(r, nullptr);
        EXPECT_EQ(r->size, e->alt_param_size);
      }
      if (e->alt_status_offset >= 0) {
        EXPECT_LE(e->alt_status_offset + 4, e->alt_param_size);
      }
    }
    EXPECT_GE(with_record, 25u);
    const NvGenEscape* card = t->find_escape(200);
    ASSERT_NE(card, nullptr);
    EXPECT_GT(card->elem_size, 0);
    const NvGenEscape* attach = t->find_escape(212);
    ASSERT_NE(attach, nullptr);
    EXPECT_EQ(attach->elem_size, 4);  // NvU32 gpu ids
    for (const NvGenUvmIoctl* u : t->uvm_ioctls()) {
      SCOPED_TRACE(u->name);
      if (u->status_offset < 0) continue;
      EXPECT_LE(u->status_offset + 4, u->param_size);
      const NvGenField* st = t->find_field(std::string(u->name) + "_PARAMS", "rmStatus");
      ASSERT_NE(st, nullptr);
      EXPECT_EQ(static_cast<int32_t>(st->offset), u->status_offset);
    }
    // Fields are sorted by key, lie inside their record and are found by name.
    const auto fields = t->fields();
    EXPECT_GT(fields.size(), 500u);
    for (size_t i = 0; i < fields.size(); ++i) {
      const NvGenField& f = *fields[i];
      if (i > 0) {
        EXPECT_LT(fields[i - 1]->key, f.key);
      }
      EXPECT_EQ(f.key, nvidia_fnv1a32(std::string(f.record) + "." + f.field));
      const NvGenRecord* r = t->find_record(f.record);
      ASSERT_NE(r, nullptr) << f.record;
      EXPECT_LE(f.offset + f.size, r->size) << f.record << "." << f.field;
      EXPECT_EQ(t->find_field(f.record, f.field), &f);
    }
    for (const NvGenRecord* r : t->records()) {
      EXPECT_EQ(r->key, nvidia_fnv1a32(r->name));
      EXPECT_EQ(t->find_record(r->name), r);
    }
    const NvGenField* cmd = t->find_field("NVOS54_PARAMETERS", "cmd");
    ASSERT_NE(cmd, nullptr);
    EXPECT_EQ(cmd->offset, 8u);
    EXPECT_EQ(cmd->size, 4u);
  }
}

TEST(NvidiaGenerated, FieldsAndRecordsByName) {
  EXPECT_EQ(nvidia_fnv1a32(""), 2166136261u);
  EXPECT_EQ(nvidia_fnv1a32("a"), 0xe40c292cu);
  const NvGenTables& t = gen("580.159.04");
  const NvGenField* st = t.find_field("nv_ioctl_nvos02_parameters_with_fd", "params.status");
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->offset, 40u);
  EXPECT_EQ(st->size, 4u);
  EXPECT_EQ(t.find_field("nv_ioctl_nvos02_parameters_with_fd", "status"), nullptr);
  EXPECT_EQ(t.find_field("NVOS54_PARAMETERS", "nope"), nullptr);
  const NvGenField* ver = t.find_field("nv_ioctl_rm_api_version_t", "versionString");
  ASSERT_NE(ver, nullptr);  // an array is one field
  EXPECT_EQ(ver->offset, 8u);
  EXPECT_EQ(ver->size, 64u);
  for (const char* name :
       {"NVOS21_PARAMETERS", "NVOS64_PARAMETERS", "NVOS54_PARAMETERS", "NV0080_ALLOC_PARAMETERS",
        "NV2080_ALLOC_PARAMETERS", "NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS", "nv_ioctl_card_info_t",
        "nv_ioctl_rm_api_version_t", "nv_ioctl_xfer_t", "nv_ioctl_export_to_dma_buf_fd_t",
        "nv_ioctl_wait_open_complete_t", "UVM_INITIALIZE_PARAMS"}) {
    EXPECT_NE(t.find_record(name), nullptr) << name;
  }
  EXPECT_EQ(t.find_record("NVOS64_PARAMETERS")->size, 48u);
  EXPECT_EQ(t.find_record("NV0080_ALLOC_PARAMETERS")->size, 56u);
  EXPECT_EQ(t.find_record("nope"), nullptr);
}

TEST(NvidiaGenerated, InterfacesAndUnexportedCommandsAreNamed) {
  const NvGenTables& t = gen("580.142");
  const NvGenCommandName* thermal = t.find_command_name(0x20808513);
  ASSERT_NE(thermal, nullptr);
  EXPECT_STREQ(thermal->name, "NV2080_CTRL_CMD_THERMAL_SYSTEM_EXECUTE_V2_PHYSICAL");
  // An exported control is named by the controls table, not here.
  EXPECT_EQ(t.find_command_name(0x20800102), nullptr);
  for (const NvGenTables* r : {&t, &gen("580.159.04"), &nvidia_generated_newest()}) {
    const NvGenInterface* i = r->find_interface(0x208005);
    ASSERT_NE(i, nullptr);
    EXPECT_STREQ(i->name, "NV20_SUBDEVICE_0_THERMAL");
    const NvGenInterface* bin = r->find_interface(0x208101);
    ASSERT_NE(bin, nullptr);
    EXPECT_STREQ(bin->name, "NV2081_BINAPI");
    // The legacy interface of nvidia-smi's GSS-forwarded thermal commands (category 0x85).
    const NvGenInterface* legacy = r->find_interface(0x208085);
    ASSERT_NE(legacy, nullptr);
    EXPECT_EQ(std::string_view(legacy->name).rfind("NV20_SUBDEVICE_0_THERMAL", 0), 0u);
    for (const NvGenControl* c : r->controls()) {
      EXPECT_EQ(r->find_command_name(c->cmd), nullptr) << std::hex << c->cmd;
    }
  }
}

}  // namespace
}  // namespace gdrproxy::proxy
