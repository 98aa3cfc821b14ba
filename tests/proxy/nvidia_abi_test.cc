// Tests of the NVIDIA ABI tables: their shape (sorted, unique, findable both ways), facts that
// real libcuda traffic pins down, the version tree, driver version detection from real
// /proc/driver/nvidia/version files, status names, and the shipped policy naming only table
// entries.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "proxy/abi/nvidia_abi.h"
#include "proxy/abi/nvidia_tables.h"

namespace gdrproxy::proxy {
namespace {

const std::string kFixtures = GDRPROXY_SOURCE_DIR "/tests/fixtures/nvidia";

template <typename Span, typename Key>
void expect_sorted_unique(const Span& table, Key key, const char* what) {
  std::set<std::string> names;
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_TRUE(names.insert(table[i].name).second) << what << " name twice: " << table[i].name;
    EXPECT_FALSE(std::string(table[i].name).empty());
    if (i > 0) {
      EXPECT_LT(key(table[i - 1]), key(table[i])) << what << " at " << table[i].name;
    }
  }
}

TEST(NvidiaAbi, EveryKnownAbiHasSortedUniqueFindableTables) {
  ASSERT_FALSE(nvidia_known_abis().empty());
  for (const NvidiaDriverAbi* abi : nvidia_known_abis()) {
    SCOPED_TRACE(std::string(abi->version));
    expect_sorted_unique(
        abi->escapes, [](const NvEscape& e) { return e.nr; }, "escape");
    expect_sorted_unique(
        abi->classes, [](const NvClass& e) { return e.id; }, "class");
    expect_sorted_unique(
        abi->controls, [](const NvControl& e) { return e.cmd; }, "control");
    expect_sorted_unique(
        abi->uvm_ioctls, [](const NvUvmIoctl& e) { return e.cmd; }, "uvm");
    for (const NvEscape& e : abi->escapes) {
      EXPECT_EQ(abi->find_escape(e.nr), &e);
      EXPECT_EQ(abi->find_escape(std::string_view(e.name)), &e);
      // A status must lie inside the struct it belongs to.
      if (e.status_offset >= 0 && e.param_size > 0) {
        EXPECT_LE(e.status_offset + 4, e.param_size);
      }
    }
    for (const NvClass& c : abi->classes) {
      EXPECT_EQ(abi->find_class(c.id), &c);
      EXPECT_EQ(abi->find_class(std::string_view(c.name)), &c);
    }
    for (const NvControl& c : abi->controls) {
      EXPECT_EQ(abi->find_control(c.cmd), &c);
      EXPECT_EQ(abi->find_control(std::string_view(c.name)), &c);
    }
    for (const NvUvmIoctl& u : abi->uvm_ioctls) {
      EXPECT_EQ(abi->find_uvm(u.cmd), &u);
      EXPECT_EQ(abi->find_uvm(std::string_view(u.name)), &u);
      if (u.status_offset >= 0) {
        EXPECT_LE(u.status_offset + 4, u.param_size);
      }
    }
  }
}

TEST(NvidiaAbi, LookupsOfAbsentEntriesReturnNull) {
  const NvidiaDriverAbi& abi = nvidia_newest_abi();
  EXPECT_EQ(abi.find_escape(uint8_t{0x99}), nullptr);
  EXPECT_EQ(abi.find_escape(std::string_view("NO_SUCH_ESCAPE")), nullptr);
  EXPECT_EQ(abi.find_class(0x1234u), nullptr);
  EXPECT_EQ(abi.find_control(0x20801234u), nullptr);
  EXPECT_EQ(abi.find_uvm(0x12345u), nullptr);
}

// The PyTorch probe on the GPU machine saw these request numbers; their IOC_SIZE must be the
// size our tables give the escape, or the decoder would call real traffic malformed.
TEST(NvidiaAbi, ObservedRequestNumbersMatchTableSizes) {
  const NvidiaDriverAbi* abi = nvidia_abi_for_version("580.159.04");
  ASSERT_NE(abi, nullptr);
  struct Seen {
    uint32_t request;
    const char* name;
  };
  for (const Seen& s : {Seen{0xc030462b, "RM_ALLOC"}, Seen{0xc020462a, "RM_CONTROL"},
                        Seen{0xc038464e, "RM_MAP_MEMORY"}}) {
    const NvEscape* e = abi->find_escape(static_cast<uint8_t>(s.request & 0xff));
    ASSERT_NE(e, nullptr) << s.name;
    EXPECT_STREQ(e->name, s.name);
    EXPECT_EQ(e->param_size, (s.request >> 16) & 0x3fff) << s.name;
  }
  const NvUvmIoctl* init = abi->find_uvm(0x30000001u);
  ASSERT_NE(init, nullptr);
  EXPECT_STREQ(init->name, "UVM_INITIALIZE");
}

TEST(NvidiaAbi, SpotChecksAgainstDriverHeaders) {
  const NvidiaDriverAbi& abi = *nvidia_abi_for_version("580.159.04");
  EXPECT_EQ(abi.find_escape(std::string_view("CARD_INFO"))->nr, 200);
  EXPECT_EQ(abi.find_escape(std::string_view("EXPORT_TO_DMABUF_FD"))->nr, 217);
  EXPECT_EQ(abi.find_escape(std::string_view("EXPORT_TO_DMABUF_FD"))->param_size, 2608);
  EXPECT_EQ(abi.find_escape(std::string_view("RM_ALLOC"))->alt_param_size, 32);
  EXPECT_EQ(abi.find_escape(std::string_view("ATTACH_GPUS_TO_FD"))->elem_size, 4);
  EXPECT_EQ(abi.find_class(std::string_view("NV01_ROOT_CLIENT"))->id, 0x41u);
  EXPECT_EQ(abi.find_class(std::string_view("HOPPER_CHANNEL_GPFIFO_A"))->id, 0xc86fu);
  EXPECT_EQ(abi.find_class(std::string_view("HOPPER_COMPUTE_A"))->id, 0xcbc0u);
  EXPECT_EQ(abi.find_control(std::string_view("NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION"))->cmd,
            0x101u);
  EXPECT_EQ(abi.find_control(std::string_view("NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECT_TO_FD"))->cmd,
            0x3d05u);
  EXPECT_EQ(abi.find_uvm(std::string_view("UVM_MAP_EXTERNAL_ALLOCATION"))->cmd, 33u);
  EXPECT_EQ(abi.find_uvm(std::string_view("UVM_MAP_EXTERNAL_ALLOCATION"))->param_size, 9264);
  EXPECT_EQ(abi.find_uvm(std::string_view("UVM_DEINITIALIZE"))->param_size, 0);
}

TEST(NvidiaAbi, VersionTree) {
  for (const char* v : {"580.65.06", "580.95.05", "580.126.20", "580.159.04", "580.173.02"}) {
    EXPECT_NE(nvidia_abi_for_version(v), nullptr) << v;
  }
  for (const char* v : {"", "580", "580.159", "580.159.05", "535.183.06", "999.1.1"}) {
    EXPECT_EQ(nvidia_abi_for_version(v), nullptr) << v;
  }
  EXPECT_EQ(nvidia_newest_abi().version, "580.173.02");
  // Every 580 release carries the root's tables (no release of the branch patched them).
  const NvidiaDriverAbi* root = nvidia_abi_for_version("580.65.06");
  for (const NvidiaDriverAbi* abi : nvidia_known_abis()) {
    EXPECT_EQ(abi->escapes.size(), root->escapes.size()) << abi->version;
    EXPECT_EQ(abi->classes.size(), root->classes.size()) << abi->version;
    EXPECT_EQ(abi->controls.size(), root->controls.size()) << abi->version;
    EXPECT_EQ(abi->uvm_ioctls.size(), root->uvm_ioctls.size()) << abi->version;
  }
}

// How a future release patches its parent: replace one entry, add one, drop one; order kept.
TEST(NvidiaAbi, PatchReplacesAddsAndRemoves) {
  const std::vector<NvControl> parent = {{0x101, "A"}, {0x102, "B"}, {0x2080, "C"}};
  const NvControl add[] = {{0x102, "B2"}, {0x150, "NEW"}};
  const uint32_t remove[] = {0x2080, 0x9999};
  const auto out = nvtables::apply_patch(parent, std::span<const NvControl>(add),
                                         std::span<const uint32_t>(remove),
                                         [](const NvControl& c) { return c.cmd; });
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].cmd, 0x101u);
  EXPECT_STREQ(out[1].name, "B2");
  EXPECT_EQ(out[2].cmd, 0x150u);
  EXPECT_STREQ(out[2].name, "NEW");
}

TEST(NvidiaAbi, DetectsVersionFromProcFiles) {
  EXPECT_EQ(detect_nvidia_driver_version(kFixtures + "/proc-open-580.159.04"), "580.159.04");
  EXPECT_EQ(detect_nvidia_driver_version(kFixtures + "/proc-proprietary"), "535.183.06");
  EXPECT_EQ(detect_nvidia_driver_version(kFixtures + "/proc-garbage"), std::nullopt);
  EXPECT_EQ(detect_nvidia_driver_version(kFixtures + "/no-such-proc"), std::nullopt);
}

TEST(NvidiaAbi, ParsesVersionText) {
  EXPECT_EQ(parse_nvidia_version_text("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
                                      "580.142  Release Build  (x@y)  \n"),
            "580.142");
  EXPECT_EQ(parse_nvidia_version_text("GCC version: gcc 12.2.0\nNVRM version: NVIDIA UNIX "
                                      "Open Kernel Module for aarch64  580.65.06  Release"),
            "580.65.06");
  EXPECT_EQ(parse_nvidia_version_text(""), std::nullopt);
  EXPECT_EQ(parse_nvidia_version_text("NVRM version:"), std::nullopt);
  EXPECT_EQ(parse_nvidia_version_text("NVRM version: NVIDIA UNIX 580. 1.x .2"), std::nullopt);
  // Only the NVRM line counts: the GCC version is not the driver's.
  EXPECT_EQ(parse_nvidia_version_text("GCC version:  gcc version 12.2.0\n"), std::nullopt);
}

TEST(NvidiaAbi, StatusNames) {
  EXPECT_STREQ(nvidia_status_name(0x0), "NV_OK");
  EXPECT_STREQ(nvidia_status_name(0x1f), "NV_ERR_INVALID_ARGUMENT");
  EXPECT_STREQ(nvidia_status_name(0x1b), "NV_ERR_INSUFFICIENT_PERMISSIONS");
  EXPECT_STREQ(nvidia_status_name(0xffff), "NV_ERR_GENERIC");
  EXPECT_STREQ(nvidia_status_name(0x10001), "NV_WARN_HOT_SWITCH");
  EXPECT_EQ(nvidia_status_name(0x12345), nullptr);
}

TEST(NvidiaAbi, PolicyNamesOnlyTableEntriesOfItsDriver) {
  std::ifstream in(GDRPROXY_SOURCE_DIR "/configs/allowlists/nvidia-580.json");
  ASSERT_TRUE(in) << "configs/allowlists/nvidia-580.json";
  const auto j = nlohmann::json::parse(in);
  const NvidiaDriverAbi* abi = nvidia_abi_for_version(j.at("driver").get<std::string>());
  ASSERT_NE(abi, nullptr);
  for (const auto& n : j.at("escapes"))
    EXPECT_NE(abi->find_escape(n.get<std::string>()), nullptr) << n;
  for (const auto& n : j.at("classes"))
    EXPECT_NE(abi->find_class(n.get<std::string>()), nullptr) << n;
  for (const auto& n : j.at("controls")) {
    EXPECT_NE(abi->find_control(n.get<std::string>()), nullptr) << n;
  }
  for (const auto& n : j.at("uvm")) {
    EXPECT_NE(abi->find_uvm(n.get<std::string>()), nullptr) << n;
  }
  // What CUDA cannot start without.
  for (const char* e : {"RM_ALLOC", "RM_CONTROL", "RM_FREE", "RM_MAP_MEMORY", "CARD_INFO",
                        "REGISTER_FD", "EXPORT_TO_DMABUF_FD"}) {
    EXPECT_NE(std::find(j["escapes"].begin(), j["escapes"].end(), e), j["escapes"].end()) << e;
  }
}

}  // namespace
}  // namespace gdrproxy::proxy
