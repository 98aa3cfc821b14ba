// RDMA netlink against sysfs: the reply parser on messages built here, the comparison on fake
// sysfs trees, and the real query on this machine.
#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include <cstring>

#include "harness/doctor/rdma_netlink.h"
#include "tests/doctor/fixture.h"

namespace gdrproxy::doctor {
namespace {
using testing::only_check;
using testing::TempTree;
using testing::tree_context;

// One netlink message of `type` with a string attribute and a u8 attribute.
void message(std::vector<uint8_t>& out, uint16_t type, const std::string& name, int mode) {
  std::vector<uint8_t> attrs;
  auto attr = [&](uint16_t t, const void* p, size_t n) {
    nlattr a{static_cast<uint16_t>(NLA_HDRLEN + n), t};
    const auto* ab = reinterpret_cast<const uint8_t*>(&a);
    const auto* pb = static_cast<const uint8_t*>(p);
    attrs.insert(attrs.end(), ab, ab + sizeof a);
    attrs.insert(attrs.end(), pb, pb + n);
    attrs.resize(attrs.size() + (NLA_ALIGN(a.nla_len) - a.nla_len), 0);
  };
  if (!name.empty()) attr(RDMA_NLDEV_ATTR_DEV_NAME, name.c_str(), name.size() + 1);
  if (mode >= 0) {
    const uint8_t m = static_cast<uint8_t>(mode);
    attr(RDMA_NLDEV_SYS_ATTR_NETNS_MODE, &m, 1);
  }
  nlmsghdr h{};
  h.nlmsg_len = static_cast<uint32_t>(NLMSG_HDRLEN + attrs.size());
  h.nlmsg_type = type;
  const auto* hb = reinterpret_cast<const uint8_t*>(&h);
  out.insert(out.end(), hb, hb + sizeof h);
  out.insert(out.end(), attrs.begin(), attrs.end());
  out.resize(out.size() + (NLMSG_ALIGN(h.nlmsg_len) - h.nlmsg_len), 0);
}

TEST(RdmaNetlink, ParsesDumpAndSysReplies) {
  std::vector<uint8_t> buf;
  const uint16_t get = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET);
  message(buf, get, "mlx5_0", -1);
  message(buf, get, "mlx5_1", -1);
  message(buf, NLMSG_DONE, "", -1);
  NldevView v;
  bool done = false;
  ASSERT_TRUE(parse_nldev_reply(buf, v, &done)) << v.error;
  EXPECT_TRUE(done);
  EXPECT_EQ(v.devices, (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
  std::vector<uint8_t> sys;
  message(sys, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET), "", 0);
  ASSERT_TRUE(parse_nldev_reply(sys, v, &done));
  EXPECT_EQ(v.netns_mode, 0);
  // A length that runs past the buffer is refused, not followed.
  buf[0] = 0xff;
  buf[1] = 0x7f;
  NldevView bad;
  EXPECT_FALSE(parse_nldev_reply(buf, bad, &done));
  EXPECT_FALSE(bad.error.empty());
}

TEST(RdmaNetlink, SysfsAgainstNetlink) {
  TempTree t;
  t.mkdir("sys/class/infiniband/mlx5_0");
  t.mkdir("sys/class/infiniband/mlx5_1");
  Context c = tree_context(t);
  NldevView v;
  v.ok = true;
  v.netns_mode = 1;
  v.devices = {"mlx5_0", "mlx5_1"};
  Report same;
  compare_nldev(c, v, same);
  EXPECT_EQ(only_check(same, "rdma.netlink").status, Status::Pass);
  EXPECT_EQ(same.facts()["rdma_netns_mode"], "shared");
  v.devices = {"mlx5_0"};
  v.netns_mode = 0;
  Report stale;
  compare_nldev(c, v, stale);
  Check k = only_check(stale, "rdma.netlink");
  EXPECT_EQ(k.status, Status::Fail);
  EXPECT_NE(k.found.find("sysfs shows mlx5_1"), std::string::npos) << k.found;
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
