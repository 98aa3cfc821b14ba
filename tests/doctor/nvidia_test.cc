// NVIDIA checks without a GPU: the module from fake /proc and /sys, a libcuda gcc builds here
// with the version the test chooses, and GPU-NIC paths on trees built from the example node.
#include <gtest/gtest.h>

#include "demo/example_snapshot.h"
#include "doctor/nvidia.h"
#include "sysfs/builder.h"
#include "sysfs/selection.h"
#include "sysfs/snapshot.h"
#include "tests/doctor/fixture.h"

namespace gdrproxy::doctor {
namespace {
using testing::build_so;
using testing::only_check;
using testing::TempTree;
using testing::tree_context;

Report run(const Context& c) {
  Report r;
  check_nvidia(c, r);
  return r;
}

const char* const kOpen =
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
    "(dvs-builder@U16-I3-B03-4-3)  Thu Sep 25 19:41:56 UTC 2025\nGCC version:  gcc 12\n";
const char* const kProprietary =
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Thu Sep 25 2025\n";

Context base(const TempTree& t) {
  Context c = tree_context(t);
  c.libcuda = t.path("no-such-libcuda.so.1");
  c.kernel_release = "6.18.0-1-amd64";
  return c;
}

TEST(NvidiaModule, OpenAndProprietaryFromProcAndSysfs) {
  TempTree t;
  t.write("proc/driver/nvidia/version", kOpen);
  auto m = read_nvidia_module(base(t));
  EXPECT_TRUE(m.loaded);
  EXPECT_EQ(m.version, "580.95.05");
  EXPECT_TRUE(m.open);
  t.write("proc/driver/nvidia/version", kProprietary);
  EXPECT_FALSE(read_nvidia_module(base(t)).open);
  TempTree s;
  s.write("sys/module/nvidia/version", "580.95.05\n");
  s.write("sys/module/nvidia/taint", "POE\n");
  m = read_nvidia_module(base(s));
  EXPECT_TRUE(m.loaded);
  EXPECT_FALSE(m.open);
  TempTree none;
  EXPECT_EQ(only_check(run(base(none)), "nvidia.module").status, Status::Warn);
}

// Which of the build's tables judge the module's release: its own (pass), its branch's nearest
// lower release for a later patch (warn, with what to regenerate), none for a branch the tables
// do not hold (fail: enforce mode refuses to start, and how to name tables).
TEST(NvidiaAbiTables, SaysWhichTablesJudgeTheDriverAndWhy) {
  struct Case {
    const char* version;
    Status status;
    const char* says;
  };
  for (const Case& k :
       {Case{"580.95.05", Status::Pass, "is in this build's ABI tables: enforced with its own"},
        Case{"580.178.04", Status::Warn,
             "enforcing with 580.173.02's, the nearest lower release of branch 580"},
        Case{"535.300.01", Status::Warn, "the nearest lower release of branch 535"},
        Case{"610.57.04", Status::Fail, "is of a branch this build's ABI tables do not hold"}}) {
    TempTree t;
    t.write("proc/driver/nvidia/version",
            std::string("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  ") + k.version +
                "  Release Build\n");
    const Check c = only_check(run(base(t)), "nvidia.abi_tables");
    EXPECT_EQ(c.status, k.status) << k.version;
    EXPECT_NE(c.found.find(k.says), std::string::npos) << c.found;
    if (k.status == Status::Fail) {
      EXPECT_NE(c.fix.find("--nvidia-abi-as RELEASE"), std::string::npos) << c.fix;
    }
  }
  TempTree none;
  Report r = run(base(none));
  for (const auto& c : r.checks()) EXPECT_NE(c.id, "nvidia.abi_tables");  // no module, no check
}

TEST(NvidiaLibcuda, AbsentIsAWarningThatSaysSo) {
  TempTree t;
  t.write("proc/driver/nvidia/version", kOpen);
  Check k = only_check(run(base(t)), "nvidia.libcuda");
  EXPECT_EQ(k.status, Status::Warn);
  EXPECT_NE(k.found.find("not loadable"), std::string::npos) << k.found;
}

void fake_libcuda(const TempTree& t, const std::string& version) {
  build_so(t.path("lib/libcuda.so." + version), "libcuda.so.1", {}, {}, false, false,
           "int cuDriverGetVersion(int* v) { *v = 12080; return 0; }\n");
  t.symlink("libcuda.so." + version, "lib/libcuda.so.1");
}

TEST(NvidiaLibcuda, SameReleaseAsModulePassesOtherFails) {
  TempTree t;
  t.write("proc/driver/nvidia/version", kOpen);
  fake_libcuda(t, "580.95.05");
  Context c = base(t);
  c.libcuda = t.path("lib/libcuda.so.1");
  Check k = only_check(run(c), "nvidia.libcuda");
  EXPECT_EQ(k.status, Status::Pass) << k.found;
  EXPECT_NE(k.found.find("libcuda 580.95.05 (CUDA 12.8)"), std::string::npos) << k.found;

  TempTree old;
  old.write("proc/driver/nvidia/version", kOpen);
  fake_libcuda(old, "580.65.06");
  c = base(old);
  c.libcuda = old.path("lib/libcuda.so.1");
  k = only_check(run(c), "nvidia.libcuda");
  EXPECT_EQ(k.status, Status::Fail);
  EXPECT_NE(k.found.find("against kernel module 580.95.05"), std::string::npos) << k.found;
}

TEST(NvidiaGdr, DmabufPeermemOrNone) {
  TempTree t;
  t.write("proc/driver/nvidia/version", kOpen);
  Check k = only_check(run(base(t)), "nvidia.gdr");
  EXPECT_EQ(k.status, Status::Pass);
  EXPECT_NE(k.found.find("via dma-buf"), std::string::npos) << k.found;

  t.write("proc/driver/nvidia/version", kProprietary);
  k = only_check(run(base(t)), "nvidia.gdr");
  EXPECT_EQ(k.status, Status::Fail) << k.found;

  t.write("sys/kernel/mm/memory_peers/nv_mem/version", "1.3\n");
  k = only_check(run(base(t)), "nvidia.gdr");
  EXPECT_EQ(k.status, Status::Pass);
  EXPECT_NE(k.found.find("via peermem"), std::string::npos) << k.found;

  TempTree old_kernel;
  old_kernel.write("proc/driver/nvidia/version", kOpen);
  Context c = base(old_kernel);
  c.kernel_release = "5.10.0-30-amd64";
  EXPECT_EQ(only_check(run(c), "nvidia.gdr").status, Status::Fail);
}

// The example HGX node (8 GPUs, 8 NICs) built into t/sys with the chosen GPUs and NICs.
void example_tree(const TempTree& t, const std::vector<std::string>& gpus,
                  const std::vector<std::string>& nics) {
  sysfs::Snapshot s =
      sysfs::snapshot_from_json(nlohmann::json::parse(demo::example_snapshot_json()));
  sysfs::SelectionRequest req;
  req.gpus_given = !gpus.empty();
  req.gpus = gpus;
  req.nics_given = !nics.empty();
  req.nics = nics;
  sysfs::build_tree(s, sysfs::select(s, req), {t.path("sys"), false});
  t.write("proc/driver/nvidia/version", kOpen);
}

TEST(NvidiaPaths, GpuWithNicUnderItsSwitchPasses) {
  TempTree t;
  example_tree(t, {}, {});
  Report r = run(base(t));
  Check k = only_check(r, "nvidia.gpu.0000:0f:00.0");
  EXPECT_EQ(k.status, Status::Pass) << r.to_text();
  EXPECT_NE(k.found.find("-> mlx5_0: PIX, GPUDirect RDMA via dma-buf"), std::string::npos)
      << k.found;
  EXPECT_EQ(r.matching("nvidia.gpu.").size(), 8u) << r.to_text();
}

TEST(NvidiaPaths, GpuWithOnlyAFarNicWarnsAndGdrLevelCounts) {
  TempTree t;
  example_tree(t, {"0000:0f:00.0"}, {"mlx5_4"});
  Context c = base(t);
  Check k = only_check(run(c), "nvidia.gpu.0000:0f:00.0");
  EXPECT_EQ(k.status, Status::Warn);
  EXPECT_NE(k.found.find("mlx5_4: SYS, GPUDirect RDMA none"), std::string::npos) << k.found;
  c.env["NCCL_NET_GDR_LEVEL"] = "SYS";
  EXPECT_EQ(only_check(run(c), "nvidia.gpu.0000:0f:00.0").status, Status::Pass);
}

TEST(NvidiaPaths, IntegerGdrLevelReadAsNcclReadsIt) {
  TempTree t;
  // GPU 0f:00.0 with NIC mlx5_0 under its own switch (PIX) and mlx5_4 across the sockets (SYS).
  example_tree(t, {"0000:0f:00.0"}, {"mlx5_4"});
  Context c = base(t);
  c.env["NCCL_NET_GDR_LEVEL"] = "4";  // old numbering: SYS
  Check k = only_check(run(c), "nvidia.gpu.0000:0f:00.0");
  EXPECT_EQ(k.status, Status::Pass) << k.found;
  EXPECT_NE(k.found.find("NCCL_NET_GDR_LEVEL=\"4\" (environment): SYS"), std::string::npos)
      << k.found;
  c.env["NCCL_NET_GDR_LEVEL"] = "3";  // PHB: the SYS path is farther
  k = only_check(run(c), "nvidia.gpu.0000:0f:00.0");
  EXPECT_EQ(k.status, Status::Warn) << k.found;
  EXPECT_NE(k.found.find("NCCL will not use GPUDirect RDMA with it: SYS is farther than PHB"),
            std::string::npos)
      << k.found;

  TempTree near;
  example_tree(near, {"0000:0f:00.0"}, {"mlx5_0"});
  c = base(near);
  c.env["NCCL_NET_GDR_LEVEL"] = "1";  // PIX, and the pair is PIX
  EXPECT_EQ(only_check(run(c), "nvidia.gpu.0000:0f:00.0").status, Status::Pass);
  c.env["NCCL_NET_GDR_LEVEL"] = "0";  // LOC: GDR off whatever the path
  k = only_check(run(c), "nvidia.gpu.0000:0f:00.0");
  EXPECT_EQ(k.status, Status::Warn) << k.found;
  EXPECT_NE(k.found.find("PIX is farther than LOC"), std::string::npos) << k.found;
}

TEST(NvidiaPaths, P2pLevelAgainstGpuPairs) {
  TempTree t;
  example_tree(t, {}, {});
  Context c = base(t);
  c.env["NCCL_P2P_LEVEL"] = "SYS";
  Check k = only_check(run(c), "nvidia.p2p_level");
  EXPECT_EQ(k.status, Status::Pass) << k.found;
  EXPECT_NE(k.found.find("every one of 28 GPU pairs"), std::string::npos) << k.found;
  c.env["NCCL_P2P_LEVEL"] = "2";  // PXB: pairs across the host bridge or sockets are farther
  k = only_check(run(c), "nvidia.p2p_level");
  EXPECT_EQ(k.status, Status::Warn) << k.found;
  EXPECT_NE(k.found.find("NCCL will not use P2P over PCI for 0000:"), std::string::npos) << k.found;
  c.env.erase("NCCL_P2P_LEVEL");  // the default: said, not warned about
  EXPECT_EQ(only_check(run(c), "nvidia.p2p_level").status, Status::Pass);
}

}  // namespace
}  // namespace gdrproxy::doctor
