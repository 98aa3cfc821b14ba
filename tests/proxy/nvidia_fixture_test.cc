// Decodes the ioctls recorded from real CUDA, PyTorch and NCCL runs on the GPU machine (driver
// 580.159.04, tests/fixtures/nvidia/): every call must decode to a known name without being
// malformed, every status must be a known NV_STATUS (and NV_OK for all but the few calls the
// driver answers otherwise), and every escape, class, control and UVM call these workloads make
// must be allowed by configs/allowlists/nvidia-580.json, so that enforce mode with the default
// policy denies none of them.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "proxy/abi/nvidia_control_names.h"
#include "proxy/decode/nvidia_decoder.h"
#include "tests/proxy/nvidia_capture.h"

namespace gdrproxy::proxy {
namespace {

using testing_capture::load;
using testing_capture::Record;
using testing_capture::Region;

struct Policy {
  std::set<std::string> escapes, classes, controls, uvm;
};

Policy load_policy() {
  std::ifstream in(GDRPROXY_SOURCE_DIR "/configs/allowlists/nvidia-580.json");
  const auto j = nlohmann::json::parse(in);
  Policy p;
  for (const auto& n : j["escapes"]) p.escapes.insert(n.get<std::string>());
  for (const auto& n : j["classes"]) p.classes.insert(n.get<std::string>());
  for (const auto& n : j["controls"]) p.controls.insert(n.get<std::string>());
  for (const auto& n : j["uvm"]) p.uvm.insert(n.get<std::string>());
  return p;
}

std::string arg_of(const DecodedCall& c, const std::string& name) {
  for (const auto& a : c.args) {
    if (a.name == name) return a.value;
  }
  return "";
}

std::string result_field(const std::vector<DecodedField>& fields, const std::string& name) {
  for (const auto& f : fields) {
    if (f.name == name) return f.value;
  }
  return "";
}

class Fixture : public ::testing::TestWithParam<std::pair<const char*, size_t>> {};

TEST_P(Fixture, DecodesEveryRecordedCallAndPolicyAllowsIt) {
  const auto [file, expected_calls] = GetParam();
  const auto recs = load(file);
  ASSERT_EQ(recs.size(), expected_calls) << file;
  const NvidiaDriverAbi& abi = *nvidia_abi_for_version("580.159.04");
  const Policy policy = load_policy();
  std::map<std::string, int> names;
  int not_ok = 0;
  for (const Record& r : recs) {
    ASSERT_FALSE(r.regions.empty());
    BufferMemory before;
    for (const Region& g : r.regions) before.map(g.addr, g.pre);
    // The captures hold each call's own parameter block, not what it points to: a device
    // object's NV0080 parameters (read for its device instance) are given as zeros.
    const auto& top = r.regions.front();
    if (r.kind == 1 && (r.cmd & 0xff) == 0x2b && top.pre.size() >= 24) {
      uint32_t h_class;
      uint64_t p_params;
      std::memcpy(&h_class, top.pre.data() + 12, 4);
      std::memcpy(&p_params, top.pre.data() + 16, 8);
      if (h_class == 0x80) before.map(p_params, std::vector<uint8_t>(56, 0));
    }
    const DecodedCall c = r.kind == 2 ? decode_nvidia_uvm_ioctl(r.cmd, r.arg, before, abi)
                                      : decode_nvidia_frontend_ioctl(r.cmd, r.arg, before, abi);
    SCOPED_TRACE(c.name);
    ++names[c.name];
    EXPECT_TRUE(c.malformed.empty()) << c.malformed;
    EXPECT_EQ(c.name.find("unknown"), std::string::npos);
    for (const auto& a : c.args) {
      EXPECT_EQ(a.value.find("unknown"), std::string::npos) << a.name;
    }

    // What the default policy must allow for this call.
    if (r.kind == 2) {
      EXPECT_TRUE(policy.uvm.count(c.name)) << c.name;
    } else {
      const NvEscape* e = abi.find_escape(*c.keys.nv_escape);
      ASSERT_NE(e, nullptr);
      EXPECT_TRUE(policy.escapes.count(e->name)) << e->name;
    }
    if (c.keys.nv_class) {
      const NvClass* k = abi.find_class(*c.keys.nv_class);
      ASSERT_NE(k, nullptr);
      EXPECT_TRUE(policy.classes.count(k->name)) << k->name;
    }
    if (c.keys.nv_control) {
      const std::string name = nvidia_control_name(abi, *c.keys.nv_control);
      ASSERT_FALSE(name.empty());
      EXPECT_TRUE(policy.controls.count(name)) << name;
    }

    // The result, from the bytes the call left behind.
    const Region* res = nullptr;
    for (const Region& g : r.regions) {
      if (g.addr == c.result_regions[0].addr && c.result_regions[0].len > 0) res = &g;
    }
    if (res == nullptr) continue;
    ASSERT_GE(res->post.size(), c.result_regions[0].len);
    std::vector<DecodedField> out;
    decode_nvidia_result(c, std::span(res->post).first(c.result_regions[0].len), {}, out);
    for (const char* f : {"status", "rmStatus", "adapterStatus"}) {
      const std::string s = result_field(out, f);
      EXPECT_EQ(s.find("unknown"), std::string::npos) << f << "=" << s;
      if (!s.empty() && s != "NV_OK(0x0)") {
        ++not_ok;
        // The one refusal in these runs: the PCIe atomics query, which the virtual machine's
        // PCIe bus does not support.
        EXPECT_EQ(arg_of(c, "cmd"),
                  "NV2080_CTRL_CMD_BUS_GET_PCIE_SUPPORTED_GPU_ATOMICS(0x2080182a)");
        EXPECT_EQ(s, "NV_ERR_NOT_SUPPORTED(0x56)");
      }
    }
    if (c.name == "EXPORT_TO_DMABUF_FD") {
      EXPECT_GE(std::stoi(result_field(out, "fd")), 0);
    }
    if (c.name == "RM_ALLOC") {
      EXPECT_NE(result_field(out, "hObjectNew"), "0x0");
    }
  }
  EXPECT_LE(not_ok, 2);
  // The calls every CUDA start-up makes.
  for (const char* n : {"RM_ALLOC", "RM_CONTROL", "RM_MAP_MEMORY", "CARD_INFO", "REGISTER_FD",
                        "UVM_INITIALIZE", "UVM_REGISTER_GPU"}) {
    EXPECT_GT(names[n], 0) << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Nvidia580, Fixture,
                         ::testing::Values(std::make_pair("cuda-dmabuf.nvcap.gz", size_t{783}),
                                           std::make_pair("pytorch-matmul.nvcap.gz", size_t{547}),
                                           std::make_pair("nccl-allreduce.nvcap.gz", size_t{2290}),
                                           std::make_pair("nccl-allreduce-2gpu.nvcap.gz",
                                                          size_t{5558})));

// The GPUDirect paths: the probe exports one dma-buf, and shares cuMem memory through the OS-unix
// export controls, as NCCL does between its two ranks.
TEST(NvidiaFixtures, ExportPathsAreRecorded) {
  const NvidiaDriverAbi& abi = *nvidia_abi_for_version("580.159.04");
  auto count = [&](const char* file) {
    std::map<std::string, int> n;
    for (const Record& r : load(file)) {
      BufferMemory mem;
      for (const Region& g : r.regions) mem.map(g.addr, g.pre);
      const DecodedCall c = r.kind == 2 ? decode_nvidia_uvm_ioctl(r.cmd, r.arg, mem, abi)
                                        : decode_nvidia_frontend_ioctl(r.cmd, r.arg, mem, abi);
      ++n[c.name];
      if (c.keys.nv_control) ++n[arg_of(c, "cmd")];
      if (c.keys.nv_class) ++n[arg_of(c, "hClass")];
    }
    return n;
  };
  auto probe = count("cuda-dmabuf.nvcap.gz");
  EXPECT_EQ(probe["EXPORT_TO_DMABUF_FD"], 1);
  EXPECT_EQ(probe["NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD(0x00003d0b)"], 1);
  EXPECT_EQ(probe["NV0000_CTRL_CMD_OS_UNIX_IMPORT_OBJECTS_FROM_FD(0x00003d0c)"], 1);
  EXPECT_EQ(probe["ATTACH_GPUS_TO_FD"], 1);
  auto nccl2 = count("nccl-allreduce-2gpu.nvcap.gz");
  EXPECT_GT(nccl2["NV0000_CTRL_CMD_OS_UNIX_EXPORT_OBJECTS_TO_FD(0x00003d0b)"], 0);
  EXPECT_GT(nccl2["NV50_P2P(0x503b)"], 0);
}

}  // namespace
}  // namespace gdrproxy::proxy
