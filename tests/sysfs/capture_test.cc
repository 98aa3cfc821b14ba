// Capture from fixture trees, and bad input: partial or broken sysfs gives logged omissions or a
// clear error, never a guessed value.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "base/error.h"
#include "base/file_io.h"
#include "sysfs/builder.h"
#include "sysfs/capture.h"
#include "sysfs/selection.h"
#include "tests/sysfs/test_util.h"

namespace gdrproxy::sysfs {
namespace {

bool has_omission(const Snapshot& s, const std::string& needle) {
  return std::any_of(s.omissions.begin(), s.omissions.end(),
                     [&](const std::string& o) { return o.find(needle) != std::string::npos; });
}

TEST(Capture, RoceFixture) {
  test::TempDir t;
  ASSERT_TRUE(test::prepare_fixture("hgx-roce16", t.path()));
  Snapshot s = capture(t.path());
  EXPECT_EQ(s.ib.size(), 16u);
  EXPECT_EQ(s.net.size(), 16u);
  EXPECT_EQ(s.numa.size(), 2u);
  EXPECT_TRUE(s.omissions.empty());
  const IbDevice* d = s.find_ib("mlx5_1");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->pci, "0000:0c:00.1");
  ASSERT_TRUE(d->verbs);
  EXPECT_EQ(d->verbs->attrs.at("dev"), "231:193\n");
  const IbPort& p = d->ports.at(0);
  EXPECT_EQ(p.gid_table_len, 255);
  EXPECT_EQ(p.gids.size(), 4u);  // two default GIDs and the IPv4 GID, each as v1 and v2
  EXPECT_EQ(p.gid_types.at(1), "RoCE v2\n");
  EXPECT_EQ(p.gid_ndevs.at(3), "rdma1\n");
  EXPECT_EQ(p.host_path.rfind("/sys/devices/pci0000:07/", 0), 0u) << p.host_path;
  EXPECT_TRUE(s.find_ib("mlx5_15")->ports.at(0).gids.empty());
  const NetDevice* n = s.find_net("rdma1");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->subpath, "net/rdma1");
}

TEST(Capture, NonPciRdmaDevicesAreLeftOutWithReason) {
  test::TempDir t;
  ASSERT_TRUE(test::prepare_fixture("hwloc-mlx4", t.path()));
  // A software RDMA device (rxe, siw) lives under devices/virtual: nothing PCI to expose.
  std::filesystem::create_directories(t / "sys/devices/virtual/infiniband/rxe0");
  ASSERT_EQ(
      ::symlink("../../devices/virtual/infiniband/rxe0", (t / "sys/class/infiniband/rxe0").c_str()),
      0);
  Snapshot s = capture(t.path());
  ASSERT_EQ(s.ib.size(), 1u);
  EXPECT_EQ(s.ib[0].name, "mlx4_0");
  // Its BMC VGA (ASPEED 1a03:2000, class 0x0300) is no GPU to expose by default.
  EXPECT_TRUE(select(s, SelectionRequest{}).gpus.empty());
  EXPECT_EQ(s.ib[0].ports.at(0).gid_table_len, 128);
  EXPECT_TRUE(has_omission(s, "/sys/class/infiniband/rxe0: not backed by a PCI function"));
  // The capture holds scif0's class link but not the device it points at.
  EXPECT_TRUE(has_omission(s, "/sys/class/infiniband/scif0: dangling link, left out"));
}

TEST(Capture, BrokenTreeGivesLoggedOmissions) {
  test::TempDir t;
  ASSERT_TRUE(test::prepare_fixture("hgx-ib8", t.path()));
  std::string sys = t / "sys";
  std::string gpu = sys +
                    "/devices/pci0000:07/0000:07:01.0/0000:08:00.0/0000:09:01.0/0000:0d:00.0/"
                    "0000:0e:00.0/0000:0f:00.0";
  ASSERT_EQ(::unlink((gpu + "/vendor").c_str()), 0);  // missing attribute
  ASSERT_EQ(::unlink((gpu + "/device").c_str()), 0);
  ASSERT_EQ(::mkdir((gpu + "/device").c_str(), 0755), 0);  // unreadable attribute (EISDIR)
  ASSERT_EQ(::unlink((sys + "/class/infiniband/mlx5_3").c_str()), 0);
  ASSERT_EQ(::symlink("../../devices/nowhere/infiniband/mlx5_3",
                      (sys + "/class/infiniband/mlx5_3").c_str()),
            0);
  ASSERT_EQ(::unlink((sys + "/class/infiniband_verbs/abi_version").c_str()), 0);
  ASSERT_EQ(::unlink((sys + "/bus/pci/devices/0000:0e:00.0").c_str()), 0);
  Snapshot s = capture(t.path());
  EXPECT_TRUE(has_omission(s, "/sys/bus/pci/devices/0000:0e:00.0: missing although"));
  EXPECT_NE(s.find_pci("0000:0e:00.0"), nullptr);  // the canonical tree decides
  EXPECT_TRUE(has_omission(s, "0000:0f:00.0/vendor: missing")) << s.omissions.size();
  EXPECT_TRUE(has_omission(s, "0000:0f:00.0/device: unreadable (Is a directory)"));
  EXPECT_TRUE(has_omission(s, "/sys/class/infiniband/mlx5_3: dangling link, left out"));
  EXPECT_TRUE(has_omission(s, "class/infiniband_verbs/abi_version: missing"));
  EXPECT_EQ(s.ib.size(), 7u);
  EXPECT_EQ(s.find_pci("0000:0f:00.0")->attrs.count("vendor"), 0u);  // not guessed
}

TEST(Capture, PeerMemoryMarkersOnlyWhenPresent) {
  test::TempDir t;
  ASSERT_TRUE(test::prepare_fixture("hgx-ib8", t / "a"));
  EXPECT_TRUE(capture(t / "a").peer_memory.empty());
  std::filesystem::create_directories(t / "a/sys/module/nvidia_peermem");
  test::write_file(t / "a/sys/module/nvidia_peermem/version", "580.159.04\n");
  Snapshot s = capture(t / "a");
  ASSERT_EQ(s.peer_memory.size(), 1u);
  EXPECT_EQ(s.peer_memory.at("module/nvidia_peermem/version"), "580.159.04\n");
  // The built tree carries the marker NCCL's GPUDirect check looks for.
  build_tree(s, select(s, SelectionRequest{}), {t / "tree", false});
  EXPECT_EQ(read_text(t / "tree/module/nvidia_peermem/version"), "580.159.04\n");
  EXPECT_FALSE(exists_nofollow(t / "tree/kernel/mm/memory_peers"));
}

TEST(Capture, NoSysfsIsAnError) {
  test::TempDir t;
  try {
    capture(t.path());
    FAIL() << "captured an empty directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(t / "sys/devices"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gdrproxy::sysfs
