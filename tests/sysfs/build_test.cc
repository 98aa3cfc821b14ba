// Building trees: selection closure, kernel-identical contents and links, atomic replacement.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <functional>

#include <gtest/gtest.h>

#include "base/error.h"
#include "base/file_io.h"
#include "sysfs/builder.h"
#include "sysfs/capture.h"
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

// A container's capture reads only its granted devices and the functions above them, and no port
// tables (its ports are bound live). The tree built from it must be the tree the whole host's
// capture gives for the same grant, entry for entry and byte for byte.
TEST(Build, LimitedCaptureBuildsTheSameContainerTree) {
  test::TempDir t;
  ASSERT_TRUE(test::prepare_fixture("hgx-roce16", t / "src"));
  const Snapshot whole = capture(t / "src");
  std::string gpu;
  for (const auto& f : whole.pci)
    if (f.attrs.count("class") && f.attrs.at("class").rfind("0x0302", 0) == 0 &&
        f.attrs.count("vendor") && f.attrs.at("vendor") == "0x10de\n")
      gpu = f.bdf;
  ASSERT_FALSE(gpu.empty());
  const IbDevice* nic = whole.find_ib("mlx5_1");
  ASSERT_TRUE(nic && nic->verbs);
  CaptureOptions only;
  only.port_tables = false;
  only.only_uverbs = {nic->verbs->name, "uverbs999",
                      "../uverbs0"};  // absent and hostile add nothing
  only.only_pci = {gpu, "not-a-bdf"};
  const Snapshot part = capture(t / "src", only);
  EXPECT_TRUE(part.omissions.empty()) << part.omissions.front();
  // mlx5_1 and, on function 0 of its slot (which the selection brings), mlx5_0.
  ASSERT_EQ(part.ib.size(), 2u);
  for (const IbDevice& d : part.ib) {
    EXPECT_EQ(d.pci.substr(0, 11), nic->pci.substr(0, 11)) << d.name;
    EXPECT_TRUE(d.ports.at(0).gids.empty()) << d.name;
  }
  EXPECT_LT(part.pci.size() * 4, whole.pci.size());
  SelectionRequest r;
  r.gpus_given = r.nics_given = true;
  r.gpus = {gpu};
  r.nics = {"mlx5_1"};
  BuildOptions live{t / "whole", false};
  live.live_ports = true;
  build_tree(whole, select(whole, r), live);
  live.out = t / "part";
  build_tree(part, select(part, r), live);
  size_t entries = 0;
  walk(t / "whole", "", [&](const std::string& rel) {
    ++entries;
    const std::string a = t / "whole/" + rel, b = t / "part/" + rel;
    ASSERT_TRUE(exists_nofollow(b)) << rel;
    if (is_symlink(a)) {
      EXPECT_EQ(read_link(a), read_link(b)) << rel;
    } else if (!is_dir(a)) {
      EXPECT_EQ(test::read_all(a), test::read_all(b)) << rel;
    }
  });
  walk(t / "part", "",
       [&](const std::string& rel) { EXPECT_TRUE(exists_nofollow(t / "whole/" + rel)) << rel; });
  EXPECT_GT(entries, 50u);
}

// Without the port tables a snapshot builds only trees whose ports are bound live, and is never
// saved: a tree or file with empty GID tables would look real.
TEST(Build, SnapshotWithoutPortTablesOnlyBuildsLivePorts) {
  test::TempDir t;
  ASSERT_TRUE(test::prepare_fixture("hgx-roce16", t / "src"));
  const Snapshot s = capture(t / "src", {.port_tables = false});
  EXPECT_TRUE(s.omissions.empty()) << s.omissions.front();
  SelectionRequest r;
  r.nics_given = true;
  r.nics = {"mlx5_0"};
  EXPECT_THROW(build_tree(s, select(s, r), {t / "tree", false}), Error);
  EXPECT_FALSE(exists_nofollow(t / "tree"));
  EXPECT_THROW(save_snapshot(s, t / "snap.json"), Error);
  EXPECT_FALSE(exists_nofollow(t / "snap.json"));
}

}  // namespace
}  // namespace gdrproxy::sysfs
