// The live-state mount plan, applied for real in a private mount namespace: a GID that appears on
// the host after the tree was built is visible through the tree, and the tree stays read-only.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "base/file_io.h"
#include "sysfs/builder.h"
#include "sysfs/capture.h"
#include "sysfs/mount_plan.h"
#include "sysfs/selection.h"
#include "tests/sysfs/test_util.h"

namespace gdrproxy::sysfs {
namespace {

TEST(MountPlan, ListsEveryExposedPortAndTheCpuTopology) {
  test::TempDir t;
  ASSERT_TRUE(test::prepare_fixture("hgx-roce16", t / "host"));
  Snapshot s = capture(t / "host");
  SelectionRequest r;
  r.gpus_given = r.nics_given = true;
  r.nics = {"mlx5_1", "mlx5_4"};
  Selection sel = select(s, r);
  build_tree(s, sel, {t / "tree", false});
  MountPlan p = make_mount_plan(s, sel, t / "tree", t / "host");
  ASSERT_EQ(p.binds.size(), 3u);
  EXPECT_EQ(p.binds[0].source, t / "host/sys/devices/pci0000:07/0000:07:01.0/0000:08:00.0/"
                                   "0000:09:00.0/0000:0a:00.0/0000:0b:00.0/0000:0c:00.1/"
                                   "infiniband/mlx5_1/ports/1");
  EXPECT_EQ(p.binds[0].target,
            "devices/pci0000:07/0000:07:01.0/0000:08:00.0/0000:09:00.0/"
            "0000:0a:00.0/0000:0b:00.0/0000:0c:00.1/infiniband/mlx5_1/ports/1");
  EXPECT_EQ(p.binds[2].target, "devices/system/cpu");
  MountPlan back = mount_plan_from_json(to_json(p));
  EXPECT_EQ(back.binds.size(), 3u);
  EXPECT_EQ(back.tree, p.tree);
  // A plan for another selection than the tree's is refused, naming the missing directory.
  r.nics = {"mlx5_7"};
  try {
    make_mount_plan(s, select(s, r), t / "tree", t / "host");
    FAIL() << "plan made for a port the tree does not have";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("mlx5_7/ports/1 is not in the tree"), std::string::npos);
  }
}

TEST(MountPlan, AppliedPlanServesLiveGidsReadOnly) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for mount namespaces";
  test::TempDir t;
  ASSERT_TRUE(test::prepare_fixture("hgx-roce16", t / "host"));
  Snapshot s = capture(t / "host");
  SelectionRequest r;
  r.gpus_given = r.nics_given = true;
  r.nics = {"mlx5_1"};
  Selection sel = select(s, r);
  build_tree(s, sel, {t / "tree", false});
  MountPlan p = make_mount_plan(s, sel, t / "tree", t / "host");
  std::string host_gid = p.binds[0].source + "/gids/5";
  std::string tree_gid = t / "tree/class/infiniband/mlx5_1/ports/1/gids/5";
  std::string tree_type = t / "tree/class/infiniband/mlx5_1/ports/1/gid_attrs/types/5";
  ASSERT_EQ(read_text(tree_gid), "0000:0000:0000:0000:0000:0000:0000:0000\n");

  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: private mount namespace, apply, then the "host" gains a GID (address configured).
    if (::unshare(CLONE_NEWNS) != 0) _exit(10);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(11);
    if (!apply_mount_plan(p).empty()) _exit(12);
    test::write_file(host_gid, "0000:0000:0000:0000:0000:ffff:c633:6433\n");
    test::write_file(p.binds[0].source + "/gid_attrs/types/5", "RoCE v2\n");
    if (read_text(tree_gid) != "0000:0000:0000:0000:0000:ffff:c633:6433\n") _exit(13);
    if (read_text(tree_type) != "RoCE v2\n") _exit(14);
    int fd = ::open(tree_gid.c_str(), O_WRONLY);
    if (fd >= 0 || errno != EROFS) _exit(15);
    if (!is_dir(t / "tree/devices/system/cpu/cpu0/topology")) _exit(16);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "child step " << WEXITSTATUS(status) << " failed";
  // Outside the namespace nothing is mounted: the tree still shows its static copy.
  EXPECT_EQ(read_text(tree_gid), "0000:0000:0000:0000:0000:0000:0000:0000\n");
}

// The container's rootfs is the tenant's: a symlink at (or above) its /sys must not redirect the
// tree's mount onto a host directory. Targets are resolved by fd with no symlink followed.
TEST(MountPlan, SymlinkedTargetInTheRootfsIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for mount namespaces";
  test::TempDir t;
  ASSERT_TRUE(test::prepare_fixture("hgx-roce16", t / "host"));
  Snapshot s = capture(t / "host");
  SelectionRequest r;
  r.gpus_given = r.nics_given = true;
  r.nics = {"mlx5_1"};
  Selection sel = select(s, r);
  build_tree(s, sel, {t / "tree", false});
  MountPlan p = make_mount_plan(s, sel, t / "tree", t / "host");
  const std::string evil = t / "host-dir";
  const std::string rootfs = t / "rootfs";
  ASSERT_EQ(::mkdir(evil.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(rootfs.c_str(), 0755), 0);
  ASSERT_EQ(::symlink(evil.c_str(), (rootfs + "/sys").c_str()), 0);
  ASSERT_EQ(::mkdir((rootfs + "/real").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((rootfs + "/real/sys").c_str(), 0755), 0);
  ASSERT_EQ(::symlink("real", (rootfs + "/link").c_str()), 0);

  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::unshare(CLONE_NEWNS) != 0) _exit(10);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(11);
    // A full path whose last component is the tenant's symlink.
    if (apply_mount_plan(p, rootfs + "/sys").find("symlink") == std::string::npos) _exit(12);
    // The same inside --root, and a symlinked directory above the target.
    if (apply_mount_plan(p, "/sys", rootfs).find("symlink") == std::string::npos) _exit(13);
    if (apply_mount_plan(p, "/link/sys", rootfs).find("symlink") == std::string::npos) _exit(14);
    if (is_dir(evil + "/bus")) _exit(15);  // nothing landed on the host directory
    // A real directory inside the root works.
    if (!apply_mount_plan(p, "/real/sys", rootfs).empty()) _exit(16);
    if (!is_dir(rootfs + "/real/sys/bus/pci/devices")) _exit(17);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "child step " << WEXITSTATUS(status) << " failed";
}

}  // namespace
}  // namespace gdrproxy::sysfs
