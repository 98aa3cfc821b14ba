// --peer: two nodes' facts compared.
#include <gtest/gtest.h>

#include "doctor/peer.h"
#include "tests/doctor/fixture.h"

namespace gdrproxy::doctor {
namespace {
using testing::only_check;
using testing::TempTree;
using testing::tree_context;
using Json = nlohmann::json;

Json facts(int rails, const std::string& nccl_version, const std::string& ib_hca,
           const std::string& hostname = "node-a",
           const std::string& boot_id = "3b0c1a5e-7d1f-4f3e-9a61-5d1e2c3b4a01") {
  Json j;
  j["host"] = {{"hostname", hostname}, {"boot_id", boot_id}};
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
  compare_facts(
      facts(2, "2.21.5", "=mlx5_0,mlx5_1"),
      facts(2, "2.21.5", "=mlx5_0,mlx5_1", "node-b", "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b10"), "b",
      r);
  EXPECT_EQ(r.exit_code(), 0) << r.to_text();
  EXPECT_EQ(r.checks().size(), 5u);
  EXPECT_EQ(only_check(r, "peer.boot_id").status, Status::Pass);
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

TEST(Peer, SameBootIdUnderTwoHostnamesWarns) {
  Report r;
  compare_facts(facts(1, "2.21.5", "x", "node-a"), facts(1, "2.21.5", "x", "node-b"), "b", r);
  Check k = only_check(r, "peer.boot_id");
  EXPECT_EQ(k.status, Status::Warn) << k.found;
  EXPECT_NE(k.found.find("one kernel under two hostnames"), std::string::npos) << k.found;
  Report self;
  compare_facts(facts(1, "2.21.5", "x"), facts(1, "2.21.5", "x"), "a", self);
  EXPECT_EQ(only_check(self, "peer.boot_id").status, Status::Warn);
}

TEST(Peer, MissingFamiliesWarnNotPass) {
  Report r;
  compare_facts(Json::object(), facts(1, "2.21.5", "x"), "b", r);
  EXPECT_EQ(only_check(r, "peer.rails").status, Status::Warn);
  EXPECT_EQ(only_check(r, "peer.libraries").status, Status::Warn);
  EXPECT_EQ(only_check(r, "peer.boot_id").status, Status::Warn);
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

}  // namespace
}  // namespace gdrproxy::doctor
