// The agent's container rules: first match wins on id, bundle and metadata globs; a container no
// rule matches gets no device; every unknown key or mistyped value is refused with its field
// named (a typo must never widen what a container gets).
#include <gtest/gtest.h>

#include "proxy/agent/agent_config.h"

namespace gdrproxy::proxy {
namespace {

AgentConfig parse(const std::string& text) {
  return AgentConfig::from_json_text(text, "agent.json");
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(AgentConfig, FirstMatchingRuleWinsAndUnmatchedGetsNoDevice) {
  const AgentConfig c = parse(R"({"version": 1, "containers": [
      {"match": {"id": "train-*", "metadata": "job=*"}, "grants": ["uverbs0"], "trace": true},
      {"match": {"id": "train-*"}, "grants": ["uverbs1"], "mode": "trace"},
      {"match": {"bundle": "/run/special/*"}, "policy": "/etc/p.json"}]})");
  EXPECT_EQ(c.rule_for("train-1", "/b", "job=42").origin, "containers[0]");
  EXPECT_EQ(c.rule_for("train-1", "/b", "").origin, "containers[1]");
  EXPECT_EQ(c.rule_for("train-1", "/b", "").mode, Mode::kTrace);
  EXPECT_EQ(c.rule_for("x", "/run/special/x", "").policy_file, "/etc/p.json");
  const ContainerRule& d = c.rule_for("stranger", "/b", "job=42");
  EXPECT_EQ(d.origin, "default");
  ASSERT_TRUE(d.grants);
  EXPECT_TRUE(d.grants->empty());
}

TEST(AgentConfig, ADefaultRuleHasNoMatchAndGrantsNothingUnlessItSays) {
  EXPECT_TRUE(parse(R"({"version": 1, "default": {"mode": "trace"}})").fallback.grants->empty());
  EXPECT_EQ(*parse(R"({"version": 1, "default": {"grants": ["rdma_cm"]}})").fallback.grants,
            std::vector<std::string>{"rdma_cm"});
  EXPECT_NE(error_of(R"({"version": 1, "default": {"match": {"id": "*"}}})").find("default.match"),
            std::string::npos);
}

TEST(AgentConfig, MistakesAreRefusedWithTheirField) {
  EXPECT_NE(error_of(R"({"version": 1, "containers": [{"grant": ["uverbs0"]}]})")
                .find("agent.json: containers[0].grant: unknown key"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"version": 1, "containers": [{"match": {"name": "x"}}]})")
                .find("containers[0].match.name: unknown key"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"version": 1, "containers": [{"grants": "uverbs0"}]})")
                .find("containers[0].grants: expected an array"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"version": 1, "containers": [{"mode": "audit"}]})")
                .find("containers[0].mode: expected"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"version": 2})").find("version: expected 1"), std::string::npos);
  EXPECT_NE(error_of("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"version": 1, "containers": {}})").find("containers: expected an array"),
            std::string::npos);
}

TEST(AgentConfig, NvidiaAbiAsNamesARelease) {
  EXPECT_FALSE(parse(R"({"version": 1})").nvidia_abi_as);
  EXPECT_EQ(parse(R"({"version": 1, "nvidia_abi_as": "595.45.04"})").nvidia_abi_as, "595.45.04");
  EXPECT_NE(error_of(R"({"version": 1, "nvidia_abi_as": 595})")
                .find("agent.json: nvidia_abi_as: expected a driver release"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"version": 1, "nvidia_abi_as": ""})").find("nvidia_abi_as: expected"),
            std::string::npos);
}

// A key is printed as it was written: escaped, so the message stays one line (found by
// agent_config_fuzz).
TEST(AgentConfig, ErrorsAreOneLineWhateverTheKey) {
  const std::string e = error_of(R"({"version": 1, "a\nb\u001b[2J": 0})");
  EXPECT_NE(e.find("agent.json: a\\x0ab\\x1b[2J: unknown key"), std::string::npos) << e;
  EXPECT_EQ(e.find_first_of("\n\x1b"), std::string::npos) << e;
}

TEST(AgentConfig, PidfdGetfdBrokeringIsOptInAndAGroupNeedsIt) {
  const AgentConfig c = parse(R"({"version": 1, "containers": [
      {"match": {"id": "rank-*"}, "broker_pidfd_getfd": true, "pidfd_getfd_group": "job42"},
      {"match": {"id": "solo"}, "broker_pidfd_getfd": true}]})");
  EXPECT_TRUE(c.rule_for("rank-0", "/b", "").broker_pidfd_getfd);
  EXPECT_EQ(c.rule_for("rank-0", "/b", "").pidfd_getfd_group, "job42");
  EXPECT_FALSE(c.rule_for("solo", "/b", "").pidfd_getfd_group);
  EXPECT_FALSE(c.rule_for("other", "/b", "").broker_pidfd_getfd);
  EXPECT_NE(error_of(R"({"version": 1, "containers": [{"pidfd_getfd_group": "job42"}]})")
                .find("containers[0].pidfd_getfd_group: a group needs"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"version": 1, "containers": [{"broker_pidfd_getfd": "yes"}]})")
                .find("containers[0].broker_pidfd_getfd: expected true or false"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"version": 1, "containers": [{"broker_pidfd_getfd": true,
                                                       "pidfd_getfd_group": ""}]})")
                .find("expected a non-empty group name"),
            std::string::npos);
}

}  // namespace
}  // namespace gdrproxy::proxy
