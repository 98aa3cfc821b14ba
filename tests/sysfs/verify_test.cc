// verify: clean on built trees, and each broken invariant is reported with its path.
#include <unistd.h>

#include <algorithm>

#include <gtest/gtest.h>

#include "base/file_io.h"
#include "sysfs/builder.h"
#include "sysfs/selection.h"
#include "sysfs/verify.h"
#include "tests/sysfs/test_util.h"

namespace gdrproxy::sysfs {
namespace {

const std::string kGpu =
    "devices/pci0000:07/0000:07:01.0/0000:08:00.0/0000:09:01.0/0000:0d:00.0/0000:0e:00.0/"
    "0000:0f:00.0";

class VerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Snapshot s = test::example_snapshot();
    build_tree(s, select(s, SelectionRequest{}), {tree(), false});
    ASSERT_TRUE(verify_tree(tree()).empty());
  }
  std::string tree() const { return t_ / "tree"; }
  std::string at(const std::string& rel) const { return tree() + "/" + rel; }
  // True if some violation is reported for exactly `path` and its message contains `words`.
  bool reported(const std::string& path, const std::string& words) {
    auto v = verify_tree(tree());
    for (const auto& x : v)
      if (x.path == path && x.message.find(words) != std::string::npos) return true;
    for (const auto& x : v) ADD_FAILURE() << "other violation: " << x.path << ": " << x.message;
    return false;
  }
  test::TempDir t_;
};

TEST_F(VerifyTest, MissingSubsystemLink) {
  ASSERT_EQ(::unlink(at(kGpu + "/subsystem").c_str()), 0);
  EXPECT_TRUE(reported(kGpu + "/subsystem", "does not resolve to bus/pci"));
}

TEST_F(VerifyTest, AbsoluteAndDanglingLinks) {
  ASSERT_EQ(::unlink(at(kGpu + "/subsystem").c_str()), 0);
  ASSERT_EQ(::symlink(at("bus/pci").c_str(), at(kGpu + "/subsystem").c_str()), 0);
  EXPECT_TRUE(reported(kGpu + "/subsystem", "absolute link target"));
  ASSERT_EQ(::unlink(at("class/net/ib3").c_str()), 0);
  ASSERT_EQ(::symlink("../../devices/gone", at("class/net/ib3").c_str()), 0);
  auto v = verify_tree(tree());
  EXPECT_TRUE(std::any_of(v.begin(), v.end(), [](const Violation& x) {
    return x.path == "class/net/ib3" && x.message.find("dangling") != std::string::npos;
  }));
}

TEST_F(VerifyTest, LinkSpelledDifferentlyFromTheKernel) {
  // Resolves to the same place, but hwloc parses link strings: the spelling must be the kernel's.
  ASSERT_EQ(::unlink(at("class/infiniband/mlx5_0").c_str()), 0);
  std::string target =
      "../../devices/./pci0000:07/0000:07:01.0/0000:08:00.0/0000:09:00.0/0000:0a:00.0/0000:0b:00.0/"
      "0000:0c:00.0/infiniband/mlx5_0";
  ASSERT_EQ(::symlink(target.c_str(), at("class/infiniband/mlx5_0").c_str()), 0);
  EXPECT_TRUE(reported("class/infiniband/mlx5_0", "the kernel spells it"));
}

TEST_F(VerifyTest, BrokenPciBusRoute) {
  ASSERT_EQ(::unlink(at("class/pci_bus/0000:0f").c_str()), 0);
  EXPECT_TRUE(reported("class/pci_bus/0000:0f", "does not reach"));
}

TEST_F(VerifyTest, ParentThatIsNotABridge) {
  std::string parent = kGpu.substr(0, kGpu.rfind('/'));
  ASSERT_EQ(::unlink(at(parent + "/class").c_str()), 0);
  test::write_file(at(parent + "/class"), "0x030200\n");
  EXPECT_TRUE(reported(kGpu, "is not a PCI bridge"));
}

TEST_F(VerifyTest, RdmaPiecesThatConsumersNeed) {
  std::string port =
      "devices/pci0000:07/0000:07:01.0/0000:08:00.0/0000:09:00.0/0000:0a:00.0/"
      "0000:0b:00.0/0000:0c:00.0/infiniband/mlx5_0/ports/1";
  ASSERT_TRUE(remove_tree(at(port + "/gid_attrs"), nullptr));
  EXPECT_TRUE(verify_tree(tree()).empty());  // an InfiniBand port: NCCL does not read it
  ASSERT_EQ(::unlink(at(port + "/link_layer").c_str()), 0);
  test::write_file(at(port + "/link_layer"), "Ethernet\n");
  EXPECT_TRUE(reported("class/infiniband/mlx5_0/ports/1/gid_attrs/types", "NCCL fails"));
  ASSERT_EQ(::unlink(at("class/infiniband_verbs/abi_version").c_str()), 0);
  auto v = verify_tree(tree());
  EXPECT_TRUE(std::any_of(v.begin(), v.end(), [](const Violation& x) {
    return x.path == "class/infiniband_verbs/abi_version";
  }));
}

TEST_F(VerifyTest, NumaNodeWithoutCpumap) {
  ASSERT_TRUE(remove_tree(at("devices/system/node/node1"), nullptr));
  auto v = verify_tree(tree());
  EXPECT_TRUE(std::any_of(v.begin(), v.end(), [](const Violation& x) {
    return x.path.find("0000:89:00.0/numa_node") != std::string::npos;
  }));
}

}  // namespace
}  // namespace gdrproxy::sysfs
