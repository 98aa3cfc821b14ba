// The BPF LSM judge's tables (proxy/sandbox/ioctl_lsm.h). The idea not to miss: an untrapped
// request may be allowed only on granted nodes of the class it is for; every other node of a
// guarded driver, a misc minor no node carries and any minor of a guarded major must be refused.
// Real nodes made with mknod in a temporary /dev; the drivers' numbers come from a /proc/devices
// and /proc/misc written by the test. (The program itself runs in the soft-RoCE VM, whose kernel
// has the BPF LSM active: tests/vm/lsm.sh.)
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "proxy/sandbox/ioctl_lsm.h"

namespace gdrproxy::proxy {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kRmFree = 0xc0104629;
constexpr uint32_t kUvmInitialize = 0x30000001;

class IoctlLsmTablesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "mknod needs root";
    char t[] = "/tmp/gdrproxy-lsm-XXXXXX";
    root_ = ::mkdtemp(t);
    fs::create_directories(root_ / "dev/infiniband");
    fs::create_directories(root_ / "proc");
    std::ofstream(root_ / "proc/devices")
        << "Character devices:\n195 nvidia-frontend\n231 infiniband_verbs\n508 nvidia-uvm\n";
    std::ofstream(root_ / "proc/misc") << "122 rdma_cm\n";
    node("dev/nvidiactl", 195, 255);
    node("dev/nvidia0", 195, 0);
    node("dev/nvidia1", 195, 1);
    node("dev/nvidia-uvm", 508, 0);
    node("dev/infiniband/uverbs0", 231, 192);
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }
  void node(const char* rel, unsigned maj, unsigned min) {
    ASSERT_EQ(::mknod((root_ / rel).c_str(), S_IFCHR | 0600, makedev(maj, min)), 0) << rel;
  }
  fs::path root_;
};

template <typename V, typename T>
bool contains(const V& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST_F(IoctlLsmTablesTest, UntrappedRequestsAreAllowedOnlyOnGrantedNodesOfTheirClass) {
  const DeviceCatalog c = DeviceCatalog::scan((root_ / "dev").string(), (root_ / "proc").string());
  const Grants g = Grants::from_specs(
      c, std::vector<std::string>{"nvidiactl", "nvidia0", "nvidia-uvm", "uverbs0"});
  KernelAllowed k;
  k.requests = {kRmFree, kUvmInitialize};
  k.frontend_requests = {kRmFree};
  k.uvm_requests = {kUvmInitialize};
  const IoctlLsmTables t = ioctl_lsm_tables(c, g, k);

  const dev_t ctl = makedev(195, 255), gpu0 = makedev(195, 0), gpu1 = makedev(195, 1),
              uvm = makedev(508, 0), verbs = makedev(231, 192), cm = makedev(10, 122);
  EXPECT_TRUE(contains(t.nodes, std::pair{ctl, true}));
  EXPECT_TRUE(contains(t.nodes, std::pair{gpu0, true}));
  EXPECT_TRUE(contains(t.nodes, std::pair{gpu1, false}))
      << "the ungranted GPU: every ioctl refused";
  EXPECT_TRUE(contains(t.nodes, std::pair{verbs, true}));
  EXPECT_TRUE(contains(t.nodes, std::pair{cm, false})) << "rdma_cm: misc minor, no node, refused";
  for (unsigned m : {195u, 231u, 508u}) EXPECT_TRUE(contains(t.guarded_majors, m)) << m;
  EXPECT_FALSE(contains(t.guarded_majors, 10u)) << "never all of misc";

  EXPECT_EQ(t.untrapped, k.requests);
  EXPECT_TRUE(contains(t.allowed, std::pair{ctl, kRmFree}));
  EXPECT_TRUE(contains(t.allowed, std::pair{gpu0, kRmFree}));
  EXPECT_FALSE(contains(t.allowed, std::pair{gpu1, kRmFree}));
  EXPECT_TRUE(contains(t.allowed, std::pair{uvm, kUvmInitialize}));
  EXPECT_FALSE(contains(t.allowed, std::pair{ctl, kUvmInitialize})) << "a UVM call on nvidiactl";
  EXPECT_FALSE(contains(t.allowed, std::pair{uvm, kRmFree})) << "an escape on nvidia-uvm";
  EXPECT_FALSE(contains(t.allowed, std::pair{verbs, kRmFree}));
  EXPECT_EQ(t.allowed.size(), 3u);
}

TEST(IoctlLsm, RefusesToLoadWithOneLineSayingWhyWhereTheKernelCannot) {
  // This checks the refusal path only where the BPF LSM is not usable here; where it is, the
  // judge loads (the VM stage tests that behaviour).
  std::string why;
  auto l = IoctlLsm::load(why);
  if (l) {
    EXPECT_TRUE(why.empty() || why.find('\n') == std::string::npos);
    return;
  }
  EXPECT_FALSE(why.empty());
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  EXPECT_TRUE(why.find("BPF LSM") != std::string::npos || why.find("lsm") != std::string::npos)
      << why;
}

}  // namespace
}  // namespace gdrproxy::proxy
