// The device catalog finds guarded nodes by driver, not only by name: an NVIDIA IMEX channel or
// an NVSwitch node, a GPU node under an unexpected path, and a device number no node carries all
// map to entries that are never granted. Real nodes made with mknod in a temporary /dev; the
// drivers' numbers come from a /proc/devices and /proc/misc written by the test (the registered
// numbers of drivers this machine does not have).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <rdma/ib_user_ioctl_verbs.h>

#include "proxy/abi/uverbs_providers.h"
#include "proxy/devices/device_catalog.h"
#include "proxy/devices/live_catalog.h"
#include "proxy/devices/uverbs_provider.h"

namespace gdrproxy::proxy {
namespace {

namespace fs = std::filesystem;

class CatalogByDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "mknod needs root";
    char t[] = "/tmp/gdrproxy-catalog-XXXXXX";
    root_ = ::mkdtemp(t);
    fs::create_directories(root_ / "dev/infiniband");
    fs::create_directories(root_ / "dev/nvidia-caps-imex-channels");
    fs::create_directories(root_ / "dev/elsewhere");
    fs::create_directories(root_ / "proc");
    std::ofstream(root_ / "proc/devices")
        << "Character devices:\n  1 mem\n195 nvidia-frontend\n231 infiniband_verbs\n"
           "231 infiniband_mad\n508 nvidia-uvm\n510 nvidia-caps-imex-channels\n\n"
           "Block devices:\n195 notachar\n";
    std::ofstream(root_ / "proc/misc") << "122 rdma_cm\n229 fuse\n";
    node("dev/nvidiactl", 195, 255);
    node("dev/nvidia0", 195, 0);
    node("dev/nvidia1", 195, 1);
    node("dev/nvidia-modeset", 195, 254);
    node("dev/nvidia-uvm", 508, 0);
    node("dev/infiniband/uverbs0", 231, 192);
    node("dev/infiniband/umad0", 231, 0);
    node("dev/infiniband/rdma_cm", 10, 122);
    node("dev/nvidia-caps-imex-channels/channel0", 510, 0);
    node("dev/elsewhere/gpu", 195, 1);  // nvidia1's number under another name
    node("dev/fuse", 10, 229);          // a misc device of another driver: not ours
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }
  void node(const char* rel, unsigned maj, unsigned min) {
    ASSERT_EQ(::mknod((root_ / rel).c_str(), S_IFCHR | 0600, makedev(maj, min)), 0) << rel;
  }
  DeviceCatalog scan() {
    return DeviceCatalog::scan((root_ / "dev").string(), (root_ / "proc").string(),
                               (root_ / "sys").string());
  }

  fs::path root_;
};

TEST_F(CatalogByDriver, NodesOfGuardedDriversAreCataloguedWhereverTheyAre) {
  const auto c = scan();
  auto at = [&](const std::string& rel) -> const DeviceNode* {
    for (const auto& n : c.nodes())
      if (n.path == (root_ / rel).string()) return &n;
    return nullptr;
  };
  ASSERT_NE(at("dev/nvidia-caps-imex-channels/channel0"), nullptr);
  EXPECT_FALSE(at("dev/nvidia-caps-imex-channels/channel0")->brokerable);
  ASSERT_NE(at("dev/elsewhere/gpu"), nullptr);
  ASSERT_NE(at("dev/nvidia-modeset"), nullptr);
  EXPECT_FALSE(at("dev/nvidia-modeset")->brokerable);
  ASSERT_NE(at("dev/infiniband/umad0"), nullptr);
  EXPECT_FALSE(at("dev/infiniband/umad0")->brokerable);
  ASSERT_NE(at("dev/nvidia0"), nullptr);
  EXPECT_TRUE(at("dev/nvidia0")->brokerable);
  EXPECT_EQ(at("dev/fuse"), nullptr);
  const auto& g = c.guarded_dirs();
  EXPECT_NE(std::find(g.begin(), g.end(), (root_ / "dev/nvidia-caps-imex-channels").string()),
            g.end());
}

TEST_F(CatalogByDriver, AnUnlistedMinorOfAGuardedDriverIsNeverGranted) {
  const auto c = scan();
  const Grants all = Grants::from_specs(c, std::nullopt);
  // nvidia7 exists nowhere under /dev (a node made with mknod later, say).
  const DeviceNode* n = c.find(makedev(195, 7));
  ASSERT_NE(n, nullptr);
  EXPECT_FALSE(all.granted(*n)) << n->path;
  ASSERT_NE(c.find(makedev(510, 3)), nullptr);
  EXPECT_FALSE(all.granted(*c.find(makedev(510, 3))));
  // rdma_cm is the misc minor 122 only; fuse (misc 229) and /dev/zero are not ours.
  EXPECT_NE(c.find(makedev(10, 122)), nullptr);
  EXPECT_EQ(c.find(makedev(10, 229)), nullptr);
  EXPECT_EQ(c.find(makedev(1, 5)), nullptr);
  // Granting a node by a name it has works; the never-granted entries cannot be named.
  EXPECT_THROW(
      Grants::from_specs(c, std::vector<std::string>{"nvidia-caps-imex-channels/channel0"}),
      std::runtime_error);
}

// A driver that registers after the catalog was made (nvidia-uvm loads on demand): before it,
// this host has no nvidia-uvm in /proc/devices and no /dev/nvidia-uvm.
class LaterDriver : public CatalogByDriver {
 protected:
  void SetUp() override {
    CatalogByDriver::SetUp();
    if (IsSkipped()) return;
    fs::remove(root_ / "dev/nvidia-uvm");
    std::ofstream(root_ / "proc/devices") << "Character devices:\n  1 mem\n195 nvidia-frontend\n";
  }
  // The driver registers major 508 and its node appears.
  void load_uvm() {
    std::ofstream(root_ / "proc/devices", std::ios::app) << "508 nvidia-uvm\n";
    node("dev/nvidia-uvm", 508, 0);
  }
};

TEST_F(LaterDriver, ANodeOfALaterDriverIsRescannedAndNeverGrantedToOlderHolders) {
  LiveCatalog live(scan(), std::chrono::hours(1));
  const std::shared_ptr<const DeviceCatalog> held = live.snapshot();
  const dev_t uvm = makedev(508, 0);
  EXPECT_EQ(held->find(uvm), nullptr);
  // Before the driver registers, the number is nobody's: no rescan, no entry.
  EXPECT_EQ(live.uncatalogued(uvm), nullptr);
  EXPECT_EQ(live.rescans(), 0u);
  load_uvm();
  const DeviceNode* late = live.uncatalogued(uvm);
  ASSERT_NE(late, nullptr);
  EXPECT_TRUE(late->uncatalogued);
  EXPECT_FALSE(Grants::from_specs(*held, std::nullopt).granted(*late));
  EXPECT_EQ(late->name, "nvidia-uvm");
  EXPECT_EQ(late->path, (root_ / "dev/nvidia-uvm").string());
  EXPECT_EQ(late->rdev, uvm);
  EXPECT_NE(ungranted_reason(*late).find("char device 508:0 (nvidia-uvm)"), std::string::npos)
      << ungranted_reason(*late);
  EXPECT_EQ(live.rescans(), 1u);
  // The old snapshot is unchanged; holders that start now get the node, brokerable.
  EXPECT_EQ(held->find(uvm), nullptr);
  const DeviceNode* now = live.snapshot()->find_node(uvm);
  ASSERT_NE(now, nullptr);
  EXPECT_TRUE(now->brokerable);
  EXPECT_EQ(now->device_class, DeviceClass::kNvidiaUvm);
  // Asked again: the same entry, no second rescan.
  EXPECT_EQ(live.uncatalogued(uvm), late);
  EXPECT_EQ(live.rescans(), 1u);
}

TEST_F(LaterDriver, NumbersOfNoGuardedDriverStayOrdinary) {
  LiveCatalog live(scan(), std::chrono::seconds(0));
  load_uvm();
  EXPECT_EQ(live.uncatalogued(makedev(1, 5)), nullptr);     // mem: /dev/zero
  EXPECT_EQ(live.uncatalogued(makedev(10, 229)), nullptr);  // fuse
  EXPECT_EQ(live.uncatalogued(makedev(4, 1)), nullptr);     // a major nobody registered
  EXPECT_EQ(live.rescans(), 0u);
}

TEST_F(LaterDriver, ANumberNobodyHoldsIsAskedAboutAtEveryMiss) {
  // A long interval: only numbers held by another driver are trusted for it.
  LiveCatalog live(scan(), std::chrono::hours(1));
  EXPECT_EQ(live.uncatalogued(makedev(508, 0)), nullptr);  // nobody holds 508 yet
  EXPECT_EQ(live.uncatalogued(makedev(1, 3)), nullptr);    // mem holds 1
  load_uvm();
  EXPECT_NE(live.uncatalogued(makedev(508, 0)), nullptr);  // at once, within the interval
}

TEST_F(LaterDriver, RescansAreRateLimitedButMissesAreStillRefused) {
  LiveCatalog live(scan(), std::chrono::hours(1));
  load_uvm();
  ASSERT_NE(live.uncatalogued(makedev(508, 0)), nullptr);
  EXPECT_EQ(live.rescans(), 1u);
  // Another driver registers within the interval: no rescan, yet its numbers are refused (from
  // /proc/misc as read at the miss), named by the driver.
  std::ofstream(root_ / "proc/misc", std::ios::app) << "123 rdma_cm\n";
  node("dev/infiniband/rdma_cm2", 10, 123);
  const DeviceNode* cm = live.uncatalogued(makedev(10, 123));
  ASSERT_NE(cm, nullptr);
  EXPECT_EQ(live.rescans(), 1u);
  EXPECT_TRUE(cm->uncatalogued);
  EXPECT_FALSE(cm->brokerable);
  EXPECT_EQ(cm->name, "rdma_cm");
  EXPECT_EQ(cm->device_class, DeviceClass::kRdmaCm);
  EXPECT_EQ(live.snapshot()->find_node(makedev(10, 123)), nullptr);
  // A minor no node carries (made with mknod later) is refused too.
  ASSERT_NE(live.uncatalogued(makedev(508, 9)), nullptr);
  EXPECT_EQ(live.rescans(), 1u);
}

TEST_F(LaterDriver, AHolderAboutToStartGetsARefreshedCatalog) {
  LiveCatalog live(scan(), std::chrono::hours(1));
  load_uvm();
  // Grants naming the new node resolve against the refreshed catalog; a second refresh within
  // the interval rescans nothing.
  const auto fresh = live.refreshed();
  EXPECT_NO_THROW(Grants::from_specs(*fresh, std::vector<std::string>{"nvidia-uvm"}));
  EXPECT_EQ(live.refreshed(), fresh);
  EXPECT_EQ(live.rescans(), 1u);
}

TEST_F(LaterDriver, ReadersNeverSeeAHalfBuiltCatalog) {
  // Rescans as often as misses come; readers on other threads take snapshots meanwhile. Each
  // snapshot is whole: every node of the first scan, plus the late node or not.
  LiveCatalog live(scan(), std::chrono::seconds(0));
  const size_t before = live.snapshot()->nodes().size();
  load_uvm();
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 2; ++i)
    readers.emplace_back([&] {
      while (!stop.load()) {
        const auto s = live.snapshot();
        const size_t n = s->nodes().size();
        if ((n != before && n != before + 1) || !s->find_node(makedev(195, 0)) ||
            (n == before + 1 && !s->find_node(makedev(508, 0))))
          ++bad;
      }
    });
  for (unsigned minor = 1; minor <= 50; ++minor)
    ASSERT_NE(live.uncatalogued(makedev(508, minor)), nullptr);
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(live.rescans(), 50u);
}

// A sysfs tree as the kernel lays it out: class/infiniband_verbs/<entry>/dev holds the node's
// number, <entry>/device links to the IB device's parent, whose driver link names the driver.
void sysfs_uverbs(const fs::path& sys, const std::string& entry, const std::string& dev,
                  const std::string& parent, const std::string& driver) {
  const fs::path cls = sys / "class/infiniband_verbs" / entry;
  fs::create_directories(cls);
  std::ofstream(cls / "dev") << dev << "\n";
  const fs::path p = sys / "devices/pci0000:00" / parent;
  fs::create_directories(p);
  fs::create_directories(sys / "bus/pci/drivers" / driver);
  fs::create_symlink(sys / "bus/pci/drivers" / driver, p / "driver");
  fs::create_symlink(p, cls / "device");
}

TEST(UverbsProvider, TheKernelDriverOfTheNodesDeviceNamesItsProvider) {
  char t[] = "/tmp/gdrproxy-provider-XXXXXX";
  const fs::path sys = ::mkdtemp(t);
  struct Cleanup {
    fs::path p;
    ~Cleanup() { fs::remove_all(p); }
  } cleanup{sys};
  sysfs_uverbs(sys, "uverbs0", "231:192", "0000:17:00.0", "efa");
  sysfs_uverbs(sys, "uverbs1", "231:193", "0000:31:00.0", "mlx5_core");
  sysfs_uverbs(sys, "uverbs2", "231:194", "ice.roce.0", "irdma.gen_2");  // an auxiliary driver
  sysfs_uverbs(sys, "uverbs3", "231:195", "0000:4b:00.0", "e1000e");     // no RDMA provider
  const std::string root = sys.string();
  // Found by device number, whatever the entry is called.
  EXPECT_EQ(uverbs_provider_of(root, makedev(231, 192)), uint32_t{RDMA_DRIVER_EFA});
  EXPECT_EQ(uverbs_provider_of(root, makedev(231, 193)), uint32_t{RDMA_DRIVER_MLX5});
  EXPECT_EQ(uverbs_provider_of(root, makedev(231, 194)), uint32_t{RDMA_DRIVER_IRDMA});
  EXPECT_EQ(uverbs_provider_of(root, makedev(231, 195)), uverbs::kProviderUnknown);
  EXPECT_EQ(uverbs_provider_of(root, makedev(231, 196)), uverbs::kProviderUnknown);
  EXPECT_EQ(uverbs_provider_of("/nonexistent", makedev(231, 192)), uverbs::kProviderUnknown);
  EXPECT_EQ(provider_of_kernel_driver("bnxt_re.rdma"), uint32_t{RDMA_DRIVER_BNXT_RE});
  EXPECT_EQ(provider_of_kernel_driver("mana"), uverbs::kRdmaDriverMana);
  EXPECT_EQ(provider_of_kernel_driver("mlx5"), uverbs::kProviderUnknown);  // no prefix matches
}

TEST_F(CatalogByDriver, EachUverbsNodeCarriesItsDevicesProvider) {
  sysfs_uverbs(root_ / "sys", "uverbs0", "231:192", "0000:17:00.0", "efa");
  const DeviceCatalog c = scan();
  const DeviceNode* n = c.find_by_name("uverbs0");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->rdma_driver, uint32_t{RDMA_DRIVER_EFA});
  EXPECT_EQ(c.find_by_name("nvidia0")->rdma_driver, uverbs::kProviderUnknown);
}

}  // namespace
}  // namespace gdrproxy::proxy
