// A cgroup v2 named by its path (base/cgroup_v2.h): the id the kernel gives BPF programs (the
// directory's inode number) and the depth the judge looks it up at. Real cgroups: the test makes
// one, two levels down, on this machine's cgroup2 mount (hybrid hosts: /sys/fs/cgroup/unified).
#include "base/cgroup_v2.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "base/process_info.h"

namespace gdrproxy {
namespace {

// The cgroup2 mount point, as the test finds it itself: mountinfo's fifth field where the
// filesystem type (after " - ") is cgroup2 and the mounted root (fourth field) is "/".
std::string mount_point() {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(" - cgroup2 ") == std::string::npos) continue;
    std::istringstream fields(line);
    std::string id, parent, devno, root, point;
    fields >> id >> parent >> devno >> root >> point;
    if (root == "/") return point;
  }
  return "";
}

TEST(CgroupV2, NamesACgroupByTheInodeOfItsDirectoryAndItsDepth) {
  const std::string mnt = mount_point();
  if (mnt.empty()) GTEST_SKIP() << "no cgroup2 hierarchy mounted here";
  if (::geteuid() != 0) GTEST_SKIP() << "making a cgroup needs root";
  const std::string top = "/gdrproxy-cgroup-test-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir((mnt + top).c_str(), 0755), 0) << mnt + top;
  ASSERT_EQ(::mkdir((mnt + top + "/inner").c_str(), 0755), 0);
  struct stat st {};
  ASSERT_EQ(::stat((mnt + top + "/inner").c_str(), &st), 0);
  std::string why;
  const auto c = cgroup_v2(top + "/inner", why);
  const UniqueFd mount = cgroup2_root();
  ASSERT_TRUE(mount);
  const bool there = c && cgroup_v2_exists(mount.get(), c->id);
  ::rmdir((mnt + top + "/inner").c_str());
  ::rmdir((mnt + top).c_str());
  ASSERT_TRUE(c) << why;
  EXPECT_EQ(c->id, st.st_ino);
  EXPECT_EQ(c->level, 2u);
  // Found by its id while it exists, known gone once removed (ids are never reused).
  EXPECT_TRUE(there);
  EXPECT_FALSE(cgroup_v2_exists(mount.get(), c->id));
  const auto root = cgroup_v2("/", why);
  ASSERT_TRUE(root) << why;
  EXPECT_EQ(root->level, 0u);
}

TEST(CgroupV2, OwnCgroupIsFound) {
  if (mount_point().empty()) GTEST_SKIP() << "no cgroup2 hierarchy mounted here";
  std::string why;
  const std::string own = cgroup_of(::getpid());
  const auto c = cgroup_v2(own, why);
  ASSERT_TRUE(c) << own << ": " << why;
  EXPECT_NE(c->id, 0u);
}

TEST(CgroupV2, RefusesWhatIsNoCgroupPathInOneLine) {
  for (const std::string bad : {"", "relative/path", "/a/../b", "/gdrproxy-no-such-cgroup-here"}) {
    std::string why;
    EXPECT_FALSE(cgroup_v2(bad, why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  }
}

}  // namespace
}  // namespace gdrproxy
