// NCCL environment checks: each made to pass and to fail on a fake sysfs.
#include <gtest/gtest.h>

#include "doctor/nccl_env.h"
#include "doctor/nccl_levels.h"
#include "tests/doctor/fixture.h"

namespace gdrproxy::doctor {
namespace {
using testing::add_hca;
using testing::ipv4_gid;
using testing::only_check;
using testing::TempTree;
using testing::tree_context;

// Eleven HCAs mlx5_0..mlx5_10 (so "mlx5_1" prefix-matches mlx5_10), each with a link-local
// IPv6 GID at 0, RoCE v1 IPv4 at 2 and RoCE v2 IPv4 at 3.
void node(const TempTree& t) {
  for (int i = 0; i <= 10; ++i) {
    const std::string ip = "10.0." + std::to_string(i) + ".1";
    add_hca(t, "mlx5_" + std::to_string(i), "eth" + std::to_string(i),
            {{0, "fe80:0000:0000:0000:0a00:00ff:fe00:0001", "IB/RoCE v1"},
             {1, "fe80:0000:0000:0000:0a00:00ff:fe00:0001", "RoCE v2"},
             {2, ipv4_gid(ip), "IB/RoCE v1"},
             {3, ipv4_gid(ip), "RoCE v2"}});
  }
  t.mkdir("sys/class/net/bond0");
  t.mkdir("sys/class/net/lo");
}

Report run(const Context& c) {
  Report r;
  check_nccl_env(c, r);
  return r;
}

TEST(NcclDeviceList, ParsesExclusionExactAndPorts) {
  auto l = parse_nccl_device_list("^=mlx5_0:1,mlx5_3");
  EXPECT_TRUE(l.exclude);
  EXPECT_TRUE(l.exact);
  ASSERT_EQ(l.entries.size(), 2u);
  EXPECT_EQ(l.entries[0].name, "mlx5_0");
  EXPECT_EQ(l.entries[0].port, 1);
  EXPECT_EQ(l.entries[1].port, -1);
  EXPECT_EQ(nccl_matches(parse_nccl_device_list("mlx5_1"), "mlx5_1", {"mlx5_1", "mlx5_10"}),
            (std::vector<std::string>{"mlx5_1", "mlx5_10"}));
  EXPECT_EQ(nccl_matches(parse_nccl_device_list("=mlx5_1"), "mlx5_1", {"mlx5_1", "mlx5_10"}),
            (std::vector<std::string>{"mlx5_1"}));
}

TEST(NcclIbHca, PrefixThatAlsoSelectsMlx5_10Fails) {
  TempTree t;
  node(t);
  Context c = tree_context(t);
  c.env["NCCL_IB_HCA"] = "mlx5_0,mlx5_1";
  Check k = only_check(run(c), "nccl.ib_hca");
  EXPECT_EQ(k.status, Status::Fail);
  EXPECT_NE(k.found.find("also selects mlx5_10"), std::string::npos) << k.found;
  EXPECT_NE(k.fix.find("NCCL_IB_HCA==mlx5_0,mlx5_1"), std::string::npos) << k.fix;
}

TEST(NcclIbHca, ExactListPasses) {
  TempTree t;
  node(t);
  Context c = tree_context(t);
  c.env["NCCL_IB_HCA"] = "=mlx5_0,mlx5_1";
  Check k = only_check(run(c), "nccl.ib_hca");
  EXPECT_EQ(k.status, Status::Pass) << k.found;
  EXPECT_NE(k.found.find("selects mlx5_0,mlx5_1"), std::string::npos) << k.found;
}

TEST(NcclIbHca, ExclusionPrefixOvermatchFailsAndUnknownNameFails) {
  TempTree t;
  node(t);
  Context c = tree_context(t);
  c.env["NCCL_IB_HCA"] = "^mlx5_1";
  EXPECT_EQ(only_check(run(c), "nccl.ib_hca").status, Status::Fail);
  c.env["NCCL_IB_HCA"] = "=mlx5_0,mlx4_0";
  Check k = only_check(run(c), "nccl.ib_hca");
  EXPECT_EQ(k.status, Status::Fail);
  EXPECT_NE(k.found.find("no such RDMA device: mlx4_0"), std::string::npos) << k.found;
  c.env["NCCL_IB_HCA"] = "=mlx5_0:2";
  EXPECT_EQ(only_check(run(c), "nccl.ib_hca").status, Status::Fail);
  c.env["NCCL_IB_HCA"] = "^=mlx5_10";
  EXPECT_EQ(only_check(run(c), "nccl.ib_hca").status, Status::Pass);
}

TEST(NcclGidIndex, RoceV2Ipv4Passes) {
  TempTree t;
  node(t);
  Context c = tree_context(t);
  c.env["NCCL_IB_HCA"] = "=mlx5_0";
  c.env["NCCL_IB_GID_INDEX"] = "3";
  Check k = only_check(run(c), "nccl.ib_gid_index");
  EXPECT_EQ(k.status, Status::Pass) << k.found;
  EXPECT_NE(k.found.find("mlx5_0:1=3 (10.0.0.1)"), std::string::npos) << k.found;
}

TEST(NcclGidIndex, Ipv6RoceV1AndEmptySlotsFail) {
  TempTree t;
  node(t);
  Context c = tree_context(t);
  c.env["NCCL_IB_HCA"] = "=mlx5_0";
  for (const char* idx : {"1", "2", "7"}) {
    c.env["NCCL_IB_GID_INDEX"] = idx;
    Check k = only_check(run(c), "nccl.ib_gid_index");
    EXPECT_EQ(k.status, Status::Fail) << idx << ": " << k.found;
    EXPECT_NE(k.fix.find("NCCL_IB_GID_INDEX=3"), std::string::npos) << k.fix;
  }
  c.env["NCCL_IB_GID_INDEX"] = "1";
  EXPECT_NE(only_check(run(c), "nccl.ib_gid_index").found.find("IPv6"), std::string::npos);
  c.env["NCCL_IB_GID_INDEX"] = "2";
  EXPECT_NE(only_check(run(c), "nccl.ib_gid_index").found.find("not RoCE v2"), std::string::npos);
}

TEST(NcclGidIndex, InfinibandPortsNeedNoRoceGid) {
  TempTree t;
  add_hca(t, "mlx5_0", "ib0", {}, "InfiniBand");
  Context c = tree_context(t);
  c.env["NCCL_IB_GID_INDEX"] = "3";
  Check k = only_check(run(c), "nccl.ib_gid_index");
  EXPECT_EQ(k.status, Status::Pass);
  EXPECT_NE(k.found.find("InfiniBand"), std::string::npos) << k.found;
}

TEST(NcclSocketIfname, ExistingPassesMissingFailsRailWarns) {
  TempTree t;
  node(t);
  Context c = tree_context(t);
  c.env["NCCL_SOCKET_IFNAME"] = "=bond0";
  EXPECT_EQ(only_check(run(c), "nccl.socket_ifname").status, Status::Pass);
  c.env["NCCL_SOCKET_IFNAME"] = "ens1f0";
  EXPECT_EQ(only_check(run(c), "nccl.socket_ifname").status, Status::Fail);
  c.env["NCCL_SOCKET_IFNAME"] = "=eth3";
  EXPECT_EQ(only_check(run(c), "nccl.socket_ifname").status, Status::Warn);
}

TEST(NcclSettings, EnvironmentWinsOverUserFileOverSystemFile) {
  TempTree t;
  node(t);
  Context c = tree_context(t);
  c.home = t.path("home");
  t.write("etc/nccl.conf",
          "# system\nNCCL_IB_HCA=mlx5_1\nNCCL_DEBUG=WARN\nNCCL_SOCKET_IFNAME=nope\n");
  t.write("home/.nccl.conf", "NCCL_DEBUG=INFO\n");
  c.env["NCCL_SOCKET_IFNAME"] = "bond0";
  c.env["NCCL_VERSION"] = "2.28.3-1";  // set by NVIDIA's images; NCCL does not read it
  auto s = nccl_settings(c);
  EXPECT_EQ(s.count("NCCL_VERSION"), 0u);
  EXPECT_EQ(s.at("NCCL_DEBUG").value, "INFO");
  EXPECT_EQ(s.at("NCCL_DEBUG").origin, t.path("home") + "/.nccl.conf");
  EXPECT_EQ(s.at("NCCL_IB_HCA").origin, "/etc/nccl.conf");
  EXPECT_EQ(s.at("NCCL_SOCKET_IFNAME").value, "bond0");
  Report r = run(c);
  // The file's prefix NCCL_IB_HCA is caught like an environment one, and named by origin.
  Check k = only_check(r, "nccl.ib_hca");
  EXPECT_EQ(k.status, Status::Fail);
  EXPECT_NE(k.found.find("/etc/nccl.conf"), std::string::npos) << k.found;
  EXPECT_NE(only_check(r, "nccl.settings").found.find("NCCL_DEBUG=\"INFO\""), std::string::npos);
  EXPECT_EQ(r.facts()["nccl_env"]["NCCL_DEBUG"], "INFO");
}

TEST(NcclSettings, TenantBytesArePrintedEscaped) {
  TempTree t;
  node(t);
  Context c = tree_context(t);
  c.env["NCCL_IB_HCA"] = "mlx5_0\n\x1b[2JFAKE\xff";
  Report r = run(c);
  const std::string text = r.to_text();
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find("\nFAKE"), std::string::npos);
  EXPECT_NO_THROW((void)r.to_json().dump());
}

TEST(NcclLevels, IntegerAndStringFormsAsNcclReadsThem) {
  EXPECT_EQ(parse_nccl_level("0"), NcclPath::LOC);
  EXPECT_EQ(parse_nccl_level("1"), NcclPath::PIX);
  EXPECT_EQ(parse_nccl_level("2"), NcclPath::PXB);
  EXPECT_EQ(parse_nccl_level("3"), NcclPath::PHB);
  EXPECT_EQ(parse_nccl_level("4"), NcclPath::SYS);
  EXPECT_EQ(parse_nccl_level("7"), NcclPath::SYS);    // clamped
  EXPECT_EQ(parse_nccl_level("010"), NcclPath::SYS);  // strtol base 0: octal 8
  EXPECT_EQ(parse_nccl_level("0x1"), NcclPath::PIX);  // and hexadecimal
  EXPECT_EQ(parse_nccl_level("99999999999999999999"), NcclPath::SYS);
  EXPECT_EQ(parse_nccl_level("NVL"), NcclPath::NVL);
  EXPECT_EQ(parse_nccl_level("PHB"), NcclPath::PHB);
  EXPECT_FALSE(parse_nccl_level("phb"));  // NCCL compares with strcmp
  EXPECT_FALSE(parse_nccl_level("-1"));
  EXPECT_FALSE(parse_nccl_level(""));
}

TEST(NcclLevels, PrintedInWordsAndIgnoredValuesWarn) {
  TempTree t;
  Context c = tree_context(t);
  c.env["NCCL_NET_GDR_LEVEL"] = "1";
  c.env["NCCL_P2P_LEVEL"] = "NVL";
  Report r = run(c);
  Check k = only_check(r, "nccl.net_gdr_level");
  EXPECT_EQ(k.status, Status::Pass) << k.found;
  EXPECT_NE(k.found.find("NCCL_NET_GDR_LEVEL=\"1\" (environment): PIX: GPUDirect RDMA"),
            std::string::npos)
      << k.found;
  EXPECT_NE(k.found.find("only under one PCIe switch"), std::string::npos) << k.found;
  k = only_check(r, "nccl.p2p_level");
  EXPECT_EQ(k.status, Status::Pass) << k.found;
  EXPECT_NE(k.found.find("only over a direct NVLink"), std::string::npos) << k.found;

  c.env["NCCL_NET_GDR_LEVEL"] = "pxb";
  c.env["NCCL_P2P_DISABLE"] = "1";
  r = run(c);
  k = only_check(r, "nccl.net_gdr_level");
  EXPECT_EQ(k.status, Status::Warn) << k.found;
  EXPECT_NE(k.found.find("NCCL ignores it and keeps PXB"), std::string::npos) << k.found;
  k = only_check(r, "nccl.p2p_level");
  EXPECT_EQ(k.status, Status::Warn) << k.found;
  EXPECT_NE(k.found.find("NCCL_P2P_DISABLE=\"1\" (environment): LOC: P2P off"), std::string::npos)
      << k.found;

  c.env.clear();
  EXPECT_NE(only_check(run(c), "nccl.net_gdr_level").found.find("PXB (default)"),
            std::string::npos);
}

}  // namespace
}  // namespace gdrproxy::doctor
