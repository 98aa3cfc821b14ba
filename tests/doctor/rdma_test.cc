// RDMA checks: uverbs ABI and nodes, per-rail IPv4, ARP sysctls and GID, on fake trees.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "doctor/rdma.h"
#include "tests/doctor/fixture.h"

namespace gdrproxy::doctor {
namespace {
using testing::add_hca;
using testing::ipv4_gid;
using testing::only_check;
using testing::TempTree;
using testing::tree_context;

Report run(const Context& c) {
  Report r;
  check_rdma(c, r);
  return r;
}

void uverbs(const TempTree& t, const std::string& name, const std::string& ibdev,
            const std::string& dev) {
  t.write("sys/class/infiniband_verbs/" + name + "/dev", dev + "\n");
  t.write("sys/class/infiniband_verbs/" + name + "/ibdev", ibdev + "\n");
}

void node_char(const TempTree& t, const std::string& name, unsigned maj, unsigned min) {
  t.mkdir("dev/infiniband");
  ASSERT_EQ(::mknod(t.path("dev/infiniband/" + name).c_str(), S_IFCHR | 0600, makedev(maj, min)),
            0);
}

TEST(RdmaAbi, SixPassesOtherFails) {
  TempTree t;
  t.write("sys/class/infiniband_verbs/abi_version", "6\n");
  EXPECT_EQ(only_check(run(tree_context(t)), "rdma.uverbs_abi").status, Status::Pass);
  t.write("sys/class/infiniband_verbs/abi_version", "7\n");
  EXPECT_EQ(only_check(run(tree_context(t)), "rdma.uverbs_abi").status, Status::Fail);
  TempTree none;
  EXPECT_EQ(only_check(run(tree_context(none)), "rdma.uverbs_abi").status, Status::Warn);
}

TEST(RdmaNodes, MatchingNumbersPassWrongNumbersFail) {
  TempTree t;
  uverbs(t, "uverbs0", "mlx5_0", "231:192");
  uverbs(t, "uverbs1", "mlx5_1", "231:193");
  node_char(t, "uverbs0", 231, 192);
  node_char(t, "uverbs1", 231, 193);
  Check k = only_check(run(tree_context(t)), "rdma.uverbs_nodes");
  EXPECT_EQ(k.status, Status::Pass) << k.found;

  TempTree bad;
  uverbs(bad, "uverbs0", "mlx5_0", "231:192");
  uverbs(bad, "uverbs1", "mlx5_1", "231:193");
  node_char(bad, "uverbs0", 231, 193);  // the other device's number
  k = only_check(run(tree_context(bad)), "rdma.uverbs_nodes");
  EXPECT_EQ(k.status, Status::Fail);
  EXPECT_NE(k.found.find("uverbs0 is 231:193, sysfs says mlx5_0 is 231:192"), std::string::npos)
      << k.found;
  EXPECT_NE(k.found.find("uverbs1 missing"), std::string::npos) << k.found;
}

// A uverbs device whose parent is bound to kernel driver `driver` ("" = no driver link), with
// driver ABI `abi`.
void provider_device(const TempTree& t, const std::string& uverbs_name, const std::string& ibdev,
                     const std::string& driver, const std::string& abi) {
  uverbs(t, uverbs_name, ibdev, "231:192");
  t.write("sys/class/infiniband_verbs/" + uverbs_name + "/abi_version", abi + "\n");
  t.mkdir("sys/class/infiniband/" + ibdev + "/device");
  if (!driver.empty())
    t.symlink("../../../../bus/pci/drivers/" + driver,
              "sys/class/infiniband/" + ibdev + "/device/driver");
}

TEST(RdmaProviderAbi, DeviceAbiInsideItsProvidersRangePasses) {
  TempTree t;
  provider_device(t, "uverbs0", "mlx5_0", "mlx5_core", "1");
  // A renamed device (udev's rocep...) is still matched by its driver.
  provider_device(t, "uverbs1", "rocep65s0f0", "mlx5_core", "1");
  // rxe sits on a netdev whose NIC driver the link shows: matched by name.
  provider_device(t, "uverbs2", "rxe0", "virtio-pci", "2");
  Report r = run(tree_context(t));
  Check k = only_check(r, "rdma.provider_abi.mlx5_0");
  EXPECT_EQ(k.status, Status::Pass) << k.found;
  EXPECT_NE(k.found.find("driver mlx5_core, provider mlx5 accepts driver ABI 1"), std::string::npos)
      << k.found;
  EXPECT_EQ(only_check(r, "rdma.provider_abi.rocep65s0f0").status, Status::Pass);
  k = only_check(r, "rdma.provider_abi.rxe0");
  EXPECT_EQ(k.status, Status::Pass) << k.found;
  EXPECT_NE(k.found.find("name rxe0, provider rxe"), std::string::npos) << k.found;
}

TEST(RdmaProviderAbi, DeviceAbiOutsideTheRangeFailsUnknownProviderWarns) {
  TempTree t;
  provider_device(t, "uverbs0", "mlx5_0", "mlx5_core", "2");
  provider_device(t, "uverbs1", "mlx4_0", "mlx4_core", "1");
  provider_device(t, "uverbs2", "foo0", "foo_core", "1");
  Report r = run(tree_context(t));
  Check k = only_check(r, "rdma.provider_abi.mlx5_0");
  EXPECT_EQ(k.status, Status::Fail) << k.found;
  EXPECT_NE(k.found.find("the device's driver ABI is 2"), std::string::npos) << k.found;
  k = only_check(r, "rdma.provider_abi.mlx4_0");
  EXPECT_EQ(k.status, Status::Fail) << k.found;
  EXPECT_NE(k.found.find("accepts driver ABI 2 to 4"), std::string::npos) << k.found;
  k = only_check(r, "rdma.provider_abi.foo0");
  EXPECT_EQ(k.status, Status::Warn) << k.found;
  EXPECT_NE(k.found.find("driver foo_core"), std::string::npos) << k.found;
}

// Two rails in one subnet with the multirail profile's sysctls (or not).
void rails(const TempTree& t, int arp_ignore_eth1) {
  add_hca(t, "mlx5_0", "eth0", {{3, ipv4_gid("10.0.0.1"), "RoCE v2"}});
  add_hca(t, "mlx5_1", "eth1", {{3, ipv4_gid("10.0.0.2"), "RoCE v2"}});
  for (const char* iface : {"all", "eth0", "eth1"}) {
    const std::string d = "proc/sys/net/ipv4/conf/" + std::string(iface) + "/";
    const bool all = std::string(iface) == "all";
    t.write(d + "arp_announce", all ? "0\n" : "2\n");
    t.write(d + "arp_filter", all ? "0\n" : "1\n");
    t.write(d + "rp_filter", all ? "0\n" : "1\n");
    t.write(d + "arp_ignore",
            all ? "0\n"
                : (std::string(iface) == "eth1" ? std::to_string(arp_ignore_eth1) : "1") + "\n");
  }
}

Context with_addresses(const TempTree& t) {
  Context c = tree_context(t);
  c.ipv4_of = [](const std::string& n) {
    if (n == "eth0") return std::vector<std::string>{"10.0.0.1"};
    if (n == "eth1") return std::vector<std::string>{"10.0.0.2"};
    return std::vector<std::string>{};
  };
  return c;
}

TEST(RdmaRails, ProfileAddressesAndGidPass) {
  TempTree t;
  rails(t, 1);
  Report r = run(with_addresses(t));
  for (const char* id : {"rdma.rail.eth0.ipv4", "rdma.rail.eth0.gid", "rdma.rail.eth0.arp",
                         "rdma.rail.eth1.ipv4", "rdma.rail.eth1.gid", "rdma.rail.eth1.arp"})
    EXPECT_EQ(only_check(r, id).status, Status::Pass) << id << "\n" << r.to_text();
  EXPECT_EQ(r.facts()["rails"].size(), 2u);
  EXPECT_EQ(r.facts()["rails"][1]["gid_index"], 3);
}

TEST(RdmaRails, ArpFluxSysctlFailsAndConfAllCounts) {
  TempTree t;
  rails(t, 0);
  Check k = only_check(run(with_addresses(t)), "rdma.rail.eth1.arp");
  EXPECT_EQ(k.status, Status::Fail);
  EXPECT_NE(k.found.find("arp_ignore=0 (want 1)"), std::string::npos) << k.found;
  // conf.all = 1 makes the effective value 1 whatever the rail's own says.
  t.write("proc/sys/net/ipv4/conf/all/arp_ignore", "1\n");
  EXPECT_EQ(only_check(run(with_addresses(t)), "rdma.rail.eth1.arp").status, Status::Pass);
}

TEST(RdmaRails, ProfileFromAnotherDirectory) {
  TempTree t;
  rails(t, 0);
  // A profile of the operator's own that asks for arp_ignore 0 on every rail.
  t.write("profiles/lax.json",
          R"({"name": "lax", "sysctls": {"arp_ignore": 0}, "source_routing": null})");
  Context c = with_addresses(t);
  c.arp_profile = "lax";
  c.arp_profile_dir = t.path("profiles");
  Check k = only_check(run(c), "rdma.rail.eth1.arp");
  EXPECT_EQ(k.status, Status::Pass) << k.found;
  c.arp_profile = "nosuch";
  EXPECT_EQ(only_check(run(c), "rdma.rail.eth1.arp").status, Status::Warn);
}

TEST(RdmaRails, MissingAddressAndGidFail) {
  TempTree t;
  rails(t, 1);
  add_hca(t, "mlx5_2", "eth2", {{0, "fe80:0000:0000:0000:0a00:00ff:fe00:0001", "RoCE v2"}});
  Report r = run(with_addresses(t));
  EXPECT_EQ(only_check(r, "rdma.rail.eth2.ipv4").status, Status::Fail);
  EXPECT_EQ(only_check(r, "rdma.rail.eth2.gid").status, Status::Fail);
  EXPECT_EQ(r.exit_code(), 2);
}

}  // namespace
}  // namespace gdrproxy::doctor
