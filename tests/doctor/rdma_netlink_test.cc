// RDMA netlink against sysfs: the comparison on fake sysfs trees, and the real query on this
// machine. (The netlink client's message building and parsing: tests/netns/rdma_nl_test.cc.)
#include <gtest/gtest.h>

#include "doctor/rdma_netlink.h"
#include "tests/doctor/fixture.h"

namespace gdrproxy::doctor {
namespace {
using testing::only_check;
using testing::TempTree;
using testing::tree_context;

TEST(RdmaNetlink, SysfsAgainstNetlink) {
  TempTree t;
  t.mkdir("sys/class/infiniband/mlx5_0");
  t.mkdir("sys/class/infiniband/mlx5_1");
  Context c = tree_context(t);
  NldevView v;
  v.ok = true;
  v.netns_mode = netns::RdmaNetnsMode::kShared;
  v.devices = {"mlx5_0", "mlx5_1"};
  Report same;
  compare_nldev(c, v, same);
  EXPECT_EQ(only_check(same, "rdma.netlink").status, Status::Pass);
  EXPECT_EQ(same.facts()["rdma_netns_mode"], "shared");
  v.devices = {"mlx5_0"};
  v.netns_mode = netns::RdmaNetnsMode::kExclusive;
  Report stale;
  compare_nldev(c, v, stale);
  Check k = only_check(stale, "rdma.netlink");
  EXPECT_EQ(k.status, Status::Fail);
  EXPECT_NE(k.found.find("sysfs shows mlx5_1"), std::string::npos) << k.found;
  EXPECT_NE(k.found.find("netns mode exclusive"), std::string::npos) << k.found;
  EXPECT_EQ(stale.facts()["rdma_netns_mode"], "exclusive");
  v.devices = {"mlx5_0", "mlx5_1", "mlx5_2"};
  Report more;
  compare_nldev(c, v, more);
  EXPECT_EQ(only_check(more, "rdma.netlink").status, Status::Warn);
}

TEST(RdmaNetlink, RealQueryAnswersOrSaysWhy) {
  NldevView v = query_nldev();
  TempTree t;
  Report r;
  compare_nldev(tree_context(t), v, r);
  if (!v.ok) {
    EXPECT_FALSE(v.error.empty());
    EXPECT_EQ(only_check(r, "rdma.netlink").status, Status::Warn);
  } else {
    // An empty fake sysfs against a node whose netlink lists devices: never a pass.
    EXPECT_EQ(only_check(r, "rdma.netlink").status,
              v.devices.empty() ? Status::Pass : Status::Warn);
  }
}

}  // namespace
}  // namespace gdrproxy::doctor
