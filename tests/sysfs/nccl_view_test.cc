// NCCL's view of built trees: path types of the example node, and why bridge ids and the
// `subsystem` link matter.
#include <unistd.h>

#include <gtest/gtest.h>

#include "sysfs/builder.h"
#include "sysfs/nccl_view.h"
#include "sysfs/selection.h"
#include "tests/sysfs/test_util.h"

namespace gdrproxy::sysfs {
namespace {

const NcclEndpoint& find(const std::vector<NcclEndpoint>& v, const std::string& name) {
  for (const auto& e : v)
    if (e.name == name) return e;
  throw std::runtime_error("no endpoint " + name);
}

TEST(NcclView, ExampleNodePathTypes) {
  test::TempDir t;
  Snapshot s = test::example_snapshot();
  build_tree(s, select(s, SelectionRequest{}), {t / "tree", false});
  NcclView v = nccl_view(t / "tree");
  ASSERT_EQ(v.gpus.size(), 8u);
  ASSERT_EQ(v.nics.size(), 8u);
  const auto& gpu0 = find(v.gpus, "0000:0f:00.0");
  // NCCL keeps every second bridge: the level-0 and level-1 upstream ports; the level-1 switch is
  // then merged into the level-0 one (Broadcom Gen5 flattening).
  EXPECT_EQ(gpu0.chain, std::vector<std::string>{"0000:08:00.0"});
  EXPECT_EQ(gpu0.numa, 0);
  EXPECT_EQ(path_type(gpu0, find(v.nics, "mlx5_0")), PathType::PIX);
  EXPECT_EQ(path_type(gpu0, find(v.nics, "mlx5_1")), PathType::PHB);
  EXPECT_EQ(path_type(gpu0, find(v.nics, "mlx5_4")), PathType::SYS);
  EXPECT_EQ(path_type(find(v.gpus, "0000:89:00.0"), find(v.nics, "mlx5_4")), PathType::PIX);
}

TEST(NcclView, BridgeIdsDecideBetweenPixAndPxb) {
  // Without the switches' subsystem ids NCCL cannot flatten them and GPU<->NIC becomes PXB.
  test::TempDir t;
  Snapshot s = test::example_snapshot();
  for (auto& f : s.pci)
    if (f.attrs.count("subsystem_device") && f.attrs["subsystem_device"] == "0x1003\n")
      f.attrs["subsystem_device"] = "0x0000\n";
  build_tree(s, select(s, SelectionRequest{}), {t / "tree", false});
  NcclView v = nccl_view(t / "tree");
  const auto& gpu0 = find(v.gpus, "0000:0f:00.0");
  EXPECT_EQ(gpu0.chain, (std::vector<std::string>{"0000:0d:00.0", "0000:08:00.0"}));
  EXPECT_EQ(path_type(gpu0, find(v.nics, "mlx5_0")), PathType::PXB);
}

TEST(NcclView, MissingSubsystemMeansNotAPciDevice) {
  test::TempDir t;
  Snapshot s = test::example_snapshot();
  build_tree(s, select(s, SelectionRequest{}), {t / "tree", false});
  std::string nic = t / "tree/bus/pci/devices/0000:0c:00.0/subsystem";
  ASSERT_EQ(::unlink(nic.c_str()), 0);
  NcclView v = nccl_view(t / "tree");
  const auto& mlx5_0 = find(v.nics, "mlx5_0");
  EXPECT_NE(mlx5_0.error.find("is not a PCI device"), std::string::npos);
  EXPECT_EQ(path_type(find(v.gpus, "0000:0f:00.0"), mlx5_0), PathType::SYS);
}

}  // namespace
}  // namespace gdrproxy::sysfs
