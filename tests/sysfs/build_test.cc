// Building trees: selection closure, kernel-identical contents and links, atomic replacement.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <functional>

#include <gtest/gtest.h>

#include "proxy/base/error.h"
#include "sysfs/builder.h"
#include "sysfs/capture.h"
#include "sysfs/fsio.h"
#include "sysfs/selection.h"
#include "tests/sysfs/test_util.h"

namespace gdrproxy::sysfs {
namespace {

// Calls fn(rel) for every entry below root (not following links).
void walk(const std::string& root, const std::string& rel,
          const std::function<void(const std::string&)>& fn) {
  for (const auto& n : list_dir(rel.empty() ? root : root + "/" + rel)) {
    std::string r = rel.empty() ? n : rel + "/" + n;
    fn(r);
    if (!is_symlink(root + "/" + r) && is_dir(root + "/" + r)) walk(root, r, fn);
  }
}

TEST(Build, FullTreeEqualsSourceFileForFileAndLinkForLink) {
  test::TempDir t;
  ASSERT_TRUE(test::prepare_fixture("hgx-roce16", t / "src"));
  Snapshot s = capture(t / "src");
  SelectionRequest all;
  all.nics_given = true;
  for (const auto& d : s.ib) all.nics.push_back(d.name);  // all, including the one without GID
  build_tree(s, select(s, all), {t / "tree", false});
  size_t links = 0, files = 0;
  walk(t / "tree", "", [&](const std::string& r) {
    std::string built = t / "tree/" + r, src = t / "src/sys/" + r;
    if (is_symlink(built)) {
      ++links;
      EXPECT_EQ(read_link(built), read_link(src)) << r;
    } else if (!is_dir(built)) {
      ++files;
      EXPECT_EQ(test::read_all(built), test::read_all(src)) << r;
    } else {
      EXPECT_TRUE(is_dir(src) || r == "fs" || r == "fs/cgroup" || r == "devices/system/cpu") << r;
    }
  });
  EXPECT_GT(links, 500u);
  EXPECT_GT(files, 10000u);
}

// Against real captures: every file the tree has that the capture also has holds the same bytes,
// and every link both have is spelled the same (the capture's spelling is the kernel's).
class BuildVsCapture : public ::testing::TestWithParam<const char*> {};

TEST_P(BuildVsCapture, SameBytesSameLinkStrings) {
  test::TempDir t;
  ASSERT_TRUE(test::prepare_fixture(GetParam(), t / "src"));
  Snapshot s = capture(t / "src");
  SelectionRequest r;  // every GPU and RDMA device, and every PCI-backed interface
  r.nics_given = true;
  for (const auto& d : s.ib) r.nics.push_back(d.name);
  for (const auto& n : s.net) r.nics.push_back(n.name);
  build_tree(s, select(s, r), {t / "tree", false});
  size_t compared_links = 0, compared_files = 0;
  walk(t / "tree", "", [&](const std::string& rel) {
    std::string built = t / "tree/" + rel, src = t / "src/sys/" + rel;
    if (is_symlink(built) && is_symlink(src)) {
      ++compared_links;
      EXPECT_EQ(read_link(built), read_link(src)) << rel;
    } else if (!is_dir(built) && !is_symlink(built) && exists_nofollow(src) && !is_dir(src)) {
      auto b = read_file(built), c = read_file(src);
      if (!c.data) return;  // unreadable in the capture: not carried
      ++compared_files;
      EXPECT_EQ(b.data, c.data) << rel;
    }
  });
  EXPECT_GT(compared_links, 10u);
  EXPECT_GT(compared_files, 20u);
}

INSTANTIATE_TEST_SUITE_P(Captures, BuildVsCapture,
                         ::testing::Values("h200", "hwloc-mlx4", "hwloc-qib"));

TEST(Build, SecondPortBringsFunctionZeroAndAllBridges) {
  Snapshot s = test::example_snapshot();
  SelectionRequest r;
  r.gpus_given = r.nics_given = true;
  r.nics = {"mlx5_0"};
  // Pretend mlx5_0 lives on function 1: NCCL will look up function 0, which must be in the tree.
  s.pci.push_back(*s.find_pci("0000:0c:00.0"));
  s.pci.back().bdf = "0000:0c:00.1";
  s.pci.back().path = s.pci.back().path.substr(0, s.pci.back().path.size() - 1) + "1";
  s.ib[0].pci = "0000:0c:00.1";
  Selection sel = select(s, r);
  EXPECT_EQ(sel.pci,
            (std::set<std::string>{"0000:07:01.0", "0000:08:00.0", "0000:09:00.0", "0000:0a:00.0",
                                   "0000:0b:00.0", "0000:0c:00.0", "0000:0c:00.1"}));
}

TEST(Build, VirtualFunctionBringsItsPhysicalFunction) {
  Snapshot s = test::example_snapshot();
  PciFunction vf = *s.find_pci("0000:0c:00.0");
  vf.bdf = "0000:0c:01.2";
  vf.path = vf.path.substr(0, vf.path.size() - 12) + vf.bdf;
  vf.physfn = "0000:0c:00.0";
  s.pci.push_back(vf);
  s.ib[0].pci = vf.bdf;
  SelectionRequest r;
  r.gpus_given = r.nics_given = true;
  r.nics = {"mlx5_0"};
  Selection sel = select(s, r);
  EXPECT_TRUE(sel.pci.count("0000:0c:00.0"));
  EXPECT_TRUE(sel.pci.count("0000:0c:01.2"));
  EXPECT_FALSE(sel.pci.count("0000:0f:00.0"));
}

TEST(Build, SelectionErrorsAndLoggedDecisions) {
  Snapshot s = test::example_snapshot();
  SelectionRequest r;
  r.gpus_given = true;
  r.gpus = {"0000:ee:00.0"};
  EXPECT_THROW(select(s, r), Error);
  r.gpus = {};
  r.nics_given = true;
  r.nics = {"mlx5_99"};
  EXPECT_THROW(select(s, r), Error);
  // A NIC without a usable GID is left out by default and the decision is logged.
  s.ib[2].ports[0].gids.clear();
  Selection sel = select(s, SelectionRequest{});
  EXPECT_EQ(sel.ib.size(), 7u);
  ASSERT_EQ(sel.notes.size(), 1u);
  EXPECT_NE(sel.notes[0].find("mlx5_2: no usable GID"), std::string::npos);
  r.nics = {"mlx5_2"};
  EXPECT_EQ(select(s, r).ib.size(), 1u);  // asked for: exposed
}

TEST(Build, RefusesToOverwriteAndReplacesAtomicallyWithForce) {
  test::TempDir t;
  Snapshot s = test::example_snapshot();
  Selection all = select(s, SelectionRequest{});
  build_tree(s, all, {t / "tree", false});
  EXPECT_THROW(build_tree(s, all, {t / "tree", false}), Error);
  EXPECT_TRUE(is_dir(t / "tree/class/infiniband/mlx5_7"));
  SelectionRequest one;
  one.gpus_given = one.nics_given = true;
  one.nics = {"mlx5_0"};
  build_tree(s, select(s, one), {t / "tree", true});
  EXPECT_FALSE(exists_nofollow(t / "tree/class/infiniband/mlx5_7"));
  EXPECT_TRUE(is_dir(t / "tree/class/infiniband/mlx5_0"));
  EXPECT_EQ(list_dir(t.path()), std::vector<std::string>{"tree"});  // no temporary left behind
}

TEST(Build, FailureLeavesNothingBehind) {
  test::TempDir t;
  Snapshot s = test::example_snapshot();
  // An attribute file named like the bridge's pci_bus directory makes the writer fail midway.
  for (auto& f : s.pci)
    if (f.bdf == "0000:08:00.0") f.attrs["pci_bus"] = "x\n";
  try {
    build_tree(s, select(s, SelectionRequest{}), {t / "tree", false});
    FAIL() << "build succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("0000:08:00.0/pci_bus"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(list_dir(t.path()).empty());
}

}  // namespace
}  // namespace gdrproxy::sysfs
