// The agent's container plan (proxy/agent/container_plan.h): what a container's session gets from
// the operator's rule, its metadata and the rule's policy, without a kernel. One test per rule key
// and per refusal; the catalog is a stand-in /dev of mknod'ed nodes (root).
#include "proxy/agent/container_plan.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace gdrproxy::proxy {
namespace {

namespace fs = std::filesystem;

class ContainerPlan : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "mknod needs root";
    char t[] = "/tmp/gdrproxy-plan-XXXXXX";
    root_ = ::mkdtemp(t);
    fs::create_directories(root_ / "dev/infiniband");
    fs::create_directories(root_ / "proc");
    std::ofstream(root_ / "proc/devices") << "Character devices:\n231 infiniband_verbs\n";
    std::ofstream(root_ / "proc/misc") << "122 rdma_cm\n";
    for (const auto& [rel, maj, min] : {std::tuple{"dev/infiniband/uverbs0", 231u, 192u},
                                        std::tuple{"dev/infiniband/uverbs1", 231u, 193u},
                                        std::tuple{"dev/infiniband/rdma_cm", 10u, 122u}})
      ASSERT_EQ(::mknod((root_ / rel).c_str(), S_IFCHR | 0600, makedev(maj, min)), 0) << rel;
    catalog_ = DeviceCatalog::scan((root_ / "dev").string(), (root_ / "proc").string(),
                                   (root_ / "sys").string());
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }
  static Policy policy(const std::string& json) {
    return Policy::from_json(nlohmann::json::parse(json), "test policy");
  }
  SessionConfig plan(const ContainerRule& rule, const std::string& metadata = "",
                     const Policy& p = Policy::builtin_default(),
                     const ContainerPlanOptions& o = {}) {
    return plan_container("train-1", rule, metadata, p, catalog_, o);
  }
  std::string refusal(const ContainerRule& rule, const std::string& metadata) {
    try {
      plan(rule, metadata);
    } catch (const Error& e) {
      return e.what();
    }
    return "(planned)";
  }
  static ContainerRule granting(std::vector<std::string> names) {
    ContainerRule r;
    r.grants = std::move(names);
    r.origin = "containers[0]";
    return r;
  }

  fs::path root_;
  DeviceCatalog catalog_;
};

TEST_F(ContainerPlan, GrantsAreTheRulesAndNameTheContainer) {
  const SessionConfig c = plan(granting({"uverbs0"}));
  EXPECT_EQ(c.name, "train-1");
  EXPECT_FALSE(c.grants.all());
  EXPECT_EQ(c.grants.names(), std::vector<std::string>{"uverbs0"});
}

TEST_F(ContainerPlan, EmptyGrantsGiveNoDevice) {
  const SessionConfig c = plan(granting({}));
  EXPECT_FALSE(c.grants.all());
  EXPECT_TRUE(c.grants.names().empty());
}

TEST_F(ContainerPlan, NoGrantsKeyTakesThePolicysGrants) {
  ContainerRule r;
  EXPECT_EQ(plan(r, "", policy(R"({"version": 1, "grants": ["uverbs1"]})")).grants.names(),
            std::vector<std::string>{"uverbs1"});
  // A policy without grants grants every brokerable device: the operator wrote neither.
  EXPECT_TRUE(plan(r, "", policy(R"({"version": 1})")).grants.all());
}

TEST_F(ContainerPlan, ModeIsTheRulesThenThePolicysThenEnforce) {
  ContainerRule r = granting({});
  EXPECT_EQ(plan(r).mode, Mode::kEnforce);
  EXPECT_EQ(plan(r, "", policy(R"({"version": 1, "mode": "trace"})")).mode, Mode::kTrace);
  r.mode = Mode::kEnforce;
  EXPECT_EQ(plan(r, "", policy(R"({"version": 1, "mode": "trace"})")).mode, Mode::kEnforce);
}

TEST_F(ContainerPlan, TraceWritesAFileNamedForTheIdOnlyWithATraceDir) {
  ContainerRule r = granting({});
  r.trace = true;
  EXPECT_FALSE(plan(r).trace_json);
  ContainerPlanOptions o;
  o.trace_dir = "/var/log/gdrproxy";
  EXPECT_EQ(plan(r, "", Policy::builtin_default(), o).trace_json,
            "/var/log/gdrproxy/train-1.jsonl");
  r.trace = false;
  EXPECT_FALSE(plan(r, "", Policy::builtin_default(), o).trace_json);
  // An id that is not a plain file name never names a path outside the directory.
  r.trace = true;
  const SessionConfig odd =
      plan_container("../../etc/x", r, "", Policy::builtin_default(), catalog_, o);
  ASSERT_TRUE(odd.trace_json);
  EXPECT_EQ(odd.trace_json->rfind("/var/log/gdrproxy/", 0), 0u);
  EXPECT_EQ(odd.trace_json->find('/', 18), std::string::npos) << *odd.trace_json;
}

TEST_F(ContainerPlan, BrokeringAndTheAgentsSettingsCarryOver) {
  ContainerRule r = granting({});
  EXPECT_FALSE(plan(r).broker_pidfd_getfd);
  r.broker_pidfd_getfd = true;
  ContainerPlanOptions o;
  o.quiet = true;
  o.sync_wakeup = true;
  o.blocking_deadline_ms = 750;
  const SessionConfig c = plan(r, "", Policy::builtin_default(), o);
  EXPECT_TRUE(c.broker_pidfd_getfd);
  EXPECT_TRUE(c.quiet);
  EXPECT_EQ(c.sync_wakeup, true);
  EXPECT_EQ(c.blocking_deadline_ms, 750u);
  // What the judge decides is not the plan's: it starts untrapped nothing.
  EXPECT_FALSE(c.kernel_allow);
  EXPECT_FALSE(c.judged_per_device);
}

TEST_F(ContainerPlan, GrantsFromMetadataWithinTheRulesCeiling) {
  ContainerRule r = granting({"uverbs0", "rdma_cm"});
  r.grants_from_metadata = true;
  EXPECT_EQ(plan(r, "job=42\ngdrproxy-grants=rdma_cm").grants.names(),
            std::vector<std::string>{"rdma_cm"});
  EXPECT_EQ(refusal(r, "gdrproxy-grants=uverbs0,uverbs1"),
            "its metadata asks for uverbs1, which rule containers[0] does not allow");
  EXPECT_EQ(refusal(r, "job=42"), "its metadata has no gdrproxy-grants line");
  // Without a ceiling, the metadata's own choice.
  r.grants.reset();
  EXPECT_EQ(plan(r, "gdrproxy-grants=uverbs1").grants.names(), std::vector<std::string>{"uverbs1"});
}

// The ceiling as the Kubernetes ConfigMap writes it, globs as runtime.json's grants.
TEST_F(ContainerPlan, GrantsFromMetadataWithinACeilingOfGlobs) {
  ContainerRule r = granting({"uverbs*", "rdma_cm"});
  r.grants_from_metadata = true;
  EXPECT_EQ(plan(r, "gdrproxy-grants=uverbs1,rdma_cm").grants.names(),
            (std::vector<std::string>{"uverbs1", "rdma_cm"}));
  EXPECT_EQ(refusal(r, "gdrproxy-grants=uverbs0,nvidia0"),
            "its metadata asks for nvidia0, which rule containers[0] does not allow");
}

TEST_F(ContainerPlan, MetadataIsIgnoredUnlessTheRuleTakesGrantsFromIt) {
  EXPECT_EQ(plan(granting({"uverbs0"}), "gdrproxy-grants=uverbs1").grants.names(),
            std::vector<std::string>{"uverbs0"});
}

TEST_F(ContainerPlan, ADeviceTheHostLacksIsRefused) {
  EXPECT_THROW(plan(granting({"uverbs7"})), std::exception);
}

}  // namespace
}  // namespace gdrproxy::proxy
