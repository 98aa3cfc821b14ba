// Tests of the NVIDIA ABI tables built from every generated release: their shape (sorted,
// unique, findable both ways), facts that real libcuda traffic pins down, the releases held,
// driver version detection from real /proc/driver/nvidia/version files, status names, and the
// shipped policy naming only table entries.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "proxy/abi/nvidia_abi.h"
#include "proxy/abi/nvidia_control_names.h"
#include "proxy/abi/nvidia_generated.h"

namespace gdrproxy::proxy {
namespace {

const std::string kFixtures = GDRPROXY_SOURCE_DIR "/tests/fixtures/nvidia";

// Sorted by number, each number once; names unique where `unique_names` (several RM controls of
// a release share an SDK name: a legacy number beside the current one).
template <typename Span, typename Key>
void expect_sorted_unique(const Span& table, Key key, const char* what, bool unique_names = true) {
  std::set<std::string> names;
  for (size_t i = 0; i < table.size(); ++i) {
    if (unique_names) {
      EXPECT_TRUE(names.insert(table[i].name).second) << what << " name twice: " << table[i].name;
    }
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
        abi->controls, [](const NvControl& e) { return e.cmd; }, "control", false);
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
      EXPECT_STREQ(abi->find_control(std::string_view(c.name))->name, c.name);
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
  const NvidiaDriverAbi& abi = *nvidia_known_abis().back();
  EXPECT_EQ(abi.find_escape(uint8_t{0x99}), nullptr);
  EXPECT_EQ(abi.find_escape(std::string_view("NO_SUCH_ESCAPE")), nullptr);
  EXPECT_EQ(abi.find_class(0x1234u), nullptr);
  EXPECT_EQ(abi.find_control(0x20800fffu), nullptr);
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

TEST(NvidiaAbi, EveryGeneratedReleaseIsKnown) {
  const auto generated = nvidia_generated_releases();
  ASSERT_GE(generated.size(), 132u);
  ASSERT_EQ(nvidia_known_abis().size(), generated.size());
  for (const NvGenTables* t : generated) {
    const NvidiaDriverAbi* abi = nvidia_abi_for_version(t->version);
    ASSERT_NE(abi, nullptr) << t->version;
    EXPECT_EQ(abi->version, t->version);
    EXPECT_EQ(abi->generated, t);
    // What every CUDA start-up needs is in every release.
    for (const char* e : {"RM_ALLOC", "RM_CONTROL", "RM_FREE", "RM_MAP_MEMORY", "CARD_INFO"})
      EXPECT_NE(abi->find_escape(std::string_view(e)), nullptr) << t->version << " " << e;
    EXPECT_NE(abi->find_uvm(std::string_view("UVM_INITIALIZE")), nullptr) << t->version;
    EXPECT_NE(abi->find_class(std::string_view("NV01_ROOT_CLIENT")), nullptr) << t->version;
  }
  for (const char* v : {"535.43.02", "550.40.07", "570.86.15", "575.51.02", "580.65.06",
                        "580.159.04", "580.173.02", "590.44.01", "595.45.04"})
    EXPECT_NE(nvidia_abi_for_version(v), nullptr) << v;
  for (const char* v : {"", "580", "580.159", "580.159.05", "999.1.1"})
    EXPECT_EQ(nvidia_abi_for_version(v), nullptr) << v;
}

// The branches differ where the driver's structs did: the tables follow each release.
TEST(NvidiaAbi, SizesFollowEachRelease) {
  const NvidiaDriverAbi& r535 = *nvidia_abi_for_version("535.43.02");
  const NvidiaDriverAbi& r580 = *nvidia_abi_for_version("580.159.04");
  EXPECT_EQ(r535.find_escape(std::string_view("EXPORT_TO_DMABUF_FD"))->param_size, 2600);
  EXPECT_EQ(r580.find_escape(std::string_view("EXPORT_TO_DMABUF_FD"))->param_size, 2608);
  EXPECT_EQ(r535.dmabuf.mapping_type, -1);
  EXPECT_EQ(r580.dmabuf.mapping_type, 32);
  EXPECT_EQ(r535.find_escape(std::string_view("RM_MAP_MEMORY_DMA"))->param_size, 56);
  EXPECT_EQ(r580.find_escape(std::string_view("RM_MAP_MEMORY_DMA"))->param_size, 64);
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
  // Forwarded controls too, by the names traces give them.
  for (const auto& n : j.at("controls")) {
    EXPECT_TRUE(nvidia_control_number(*abi->generated, n.get<std::string>())) << n;
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
