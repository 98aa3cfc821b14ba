// --peer: two nodes' facts compared, and the whole CLI run twice (report, then --peer on it).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>

#include "harness/doctor/peer.h"
#include "tests/doctor/fixture.h"

namespace gdrproxy::doctor {
namespace {
using testing::add_hca;
using testing::ipv4_gid;
using testing::only_check;
using testing::TempTree;
using testing::tree_context;
using Json = nlohmann::json;

Json facts(int rails, const std::string& nccl_version, const std::string& ib_hca) {
  Json j;
  j["rails"] = Json::array();
  j["hcas"] = Json::array();
  for (int i = 0; i < rails; ++i) {
    j["rails"].push_back({{"netdev", "eth" + std::to_string(i)}, {"gid_index", 3}});
    j["hcas"].push_back(
        {{"name", "mlx5_" + std::to_string(i)},
         {"ports", {{{"port", "1"}, {"link_layer", "Ethernet"}, {"rate", "200"}}}}});
  }
  j["libraries"] = {{"4242", {{"libnccl", {"libnccl.so." + nccl_version}}}}};
  j["nccl_env"] = {{"NCCL_IB_HCA", ib_hca}};
  return j;
}

TEST(Peer, AlikeNodesPass) {
  Report r;
  compare_facts(facts(2, "2.21.5", "=mlx5_0,mlx5_1"), facts(2, "2.21.5", "=mlx5_0,mlx5_1"), "b", r);
  EXPECT_EQ(r.exit_code(), 0) << r.to_text();
  EXPECT_EQ(r.checks().size(), 4u);
}

TEST(Peer, DifferentRailsLibrariesAndEnvAreReported) {
  Report r;
  compare_facts(facts(2, "2.21.5", "=mlx5_0,mlx5_1"), facts(1, "2.26.2", "mlx5"), "b", r);
  EXPECT_EQ(only_check(r, "peer.rails").status, Status::Fail);
  Check lib = only_check(r, "peer.libraries");
  EXPECT_EQ(lib.status, Status::Fail);
  EXPECT_NE(lib.found.find("only on peer b: libnccl.so.2.26.2"), std::string::npos) << lib.found;
  EXPECT_EQ(only_check(r, "peer.hcas").status, Status::Warn);
  EXPECT_EQ(only_check(r, "peer.nccl_env").status, Status::Warn);
}

TEST(Peer, MissingFamiliesWarnNotPass) {
  Report r;
  compare_facts(Json::object(), facts(1, "2.21.5", "x"), "b", r);
  EXPECT_EQ(only_check(r, "peer.rails").status, Status::Warn);
  EXPECT_EQ(only_check(r, "peer.libraries").status, Status::Warn);
}

TEST(Peer, NotAReportFails) {
  TempTree t;
  t.write("bad.json", "{\"schema\": \"something else\"}");
  Context c = tree_context(t);
  c.peer = t.path("bad.json");
  Report r;
  check_peer(c, r);
  EXPECT_EQ(only_check(r, "peer.file").status, Status::Fail);
}

int shell(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// The binary end to end: --json, the exit status, then --peer on its own report.
TEST(DoctorCli, JsonReportExitStatusAndPeerRoundTrip) {
  TempTree t;
  // A netdev name no host has: its IPv4 (read from this namespace) is absent, so rdma fails.
  add_hca(t, "mlx5_0", "doctorrail0", {{3, ipv4_gid("10.0.0.1"), "RoCE v2"}});
  const std::string bin = GDRPROXY_BIN;
  const std::string base = "env -i " + bin + " doctor --sysfs-root " + t.path("sys");
  EXPECT_EQ(shell(base + " --only nccl --json > " + t.path("a.json")), 0);
  std::ifstream in(t.path("a.json"));
  Json j = Json::parse(in);
  EXPECT_EQ(j["schema"], "gdrproxy.doctor");
  EXPECT_EQ(j["status"], "PASS");
  EXPECT_EQ(shell("env -i NCCL_IB_HCA=mlx4 " + bin + " doctor --sysfs-root " + t.path("sys") +
                  " --only nccl > /dev/null"),
            2);
  EXPECT_EQ(
      shell(base + " --only nccl,rdma,peer --peer " + t.path("a.json") + " > " + t.path("p.txt")),
      2);
  std::ifstream p(t.path("p.txt"));
  std::string text((std::istreambuf_iterator<char>(p)), {});
  EXPECT_NE(text.find("PASS  peer.nccl_env"), std::string::npos) << text;
  EXPECT_NE(text.find("FAIL  rdma.rail.doctorrail0.ipv4"), std::string::npos) << text;
  EXPECT_NE(text.find("WARN  peer.rails"), std::string::npos) << text;  // a.json has no rails
  EXPECT_NE(text.find("WARN  peer.hcas"), std::string::npos) << text;
  EXPECT_EQ(shell(bin + " doctor --help > /dev/null"), 0);
  EXPECT_EQ(shell(bin + " doctor --only nosuch > /dev/null 2>&1"), 2);
}

}  // namespace
}  // namespace gdrproxy::doctor
