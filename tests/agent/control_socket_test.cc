// `gdrproxy agent ctl`'s answers (proxy/agent/control_socket.h), over a stand-in for the agent's
// registry (the ControlVerbs the socket is given): one JSON object a line, every documented field
// present, the verbs reaching the registry, a tenant's container id carried as JSON, never raw.
#include "proxy/agent/control_socket.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace gdrproxy::proxy {
namespace {

// A stand-in registry: two containers, one judged in the kernel.
class TwoContainers : public ControlVerbs {
 public:
  std::vector<ContainerView> containers(bool with_stats) const override {
    ContainerView a;
    a.id = "team-a";
    a.pid = 4242;
    a.grants = {"uverbs0"};
    a.listeners = 2;
    a.judged_in_kernel = "cgroup";
    a.pod = {"gdrproxy-test", "three\n{\"id\":\"forged\"}", "0123abcd", "app0", "container"};
    ContainerView b;
    b.id = "evil\"\n{\"id\":\"forged\"}";
    b.mode = Mode::kTrace;
    b.judged_in_kernel = "its cgroup is not on cgroup v2";
    if (with_stats) {
      a.stats.ioctls = 10;
      a.stats.kernel_refused = 3;
      b.stats.denied = 1;
    }
    return {a, b};
  }
  size_t drain_all() override {
    drained_all = true;
    return 2;
  }
  bool drain(const std::string& id) override {
    drained = id;
    return id == "team-a";
  }
  std::string judge_pending(const std::string& args) override {
    pending_args = args;
    return "{\"judged\":\"pending\"}\n";
  }
  bool drained_all = false;
  std::string drained, pending_args;
};

std::vector<nlohmann::json> lines(const std::string& out) {
  std::vector<nlohmann::json> v;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) v.push_back(nlohmann::json::parse(l));
  return v;
}

TEST(ControlAnswer, ListIsOneLinePerContainerAndATenantsIdCannotForgeOne) {
  TwoContainers agent;
  const auto v = lines(control_answer("list", agent));
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0]["id"], "team-a");
  EXPECT_EQ(v[0]["pid"], 4242);
  EXPECT_EQ(v[0]["grants"], nlohmann::json({"uverbs0"}));
  EXPECT_EQ(v[0]["mode"], "enforce");
  EXPECT_EQ(v[0]["listeners"], 2);
  EXPECT_EQ(v[0]["judged_in_kernel"], "cgroup");
  for (const char* k : {"pidns", "cgroup", "status", "bundle", "rule", "draining"})
    EXPECT_TRUE(v[0].contains(k)) << k;
  EXPECT_EQ(v[1]["id"], "evil\"\n{\"id\":\"forged\"}");
  EXPECT_EQ(v[1]["mode"], "trace");
  // The pod and container its bundle's CRI annotations name; none for a container without.
  EXPECT_EQ(v[0]["pod"], nlohmann::json({{"namespace", "gdrproxy-test"},
                                         {"name", "three\n{\"id\":\"forged\"}"},
                                         {"id", "0123abcd"}}));
  EXPECT_EQ(v[0]["container"], "app0");
  EXPECT_EQ(v[0]["kind"], "container");
  for (const char* k : {"pod", "container", "kind"}) EXPECT_FALSE(v[1].contains(k)) << k;
}

TEST(ControlAnswer, StatsCountPerContainerAndKernelRefusalsOnlyWhereJudged) {
  TwoContainers agent;
  const auto v = lines(control_answer("stats", agent));
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0]["ioctls"], 10);
  EXPECT_EQ(v[0]["kernel_refused"], 3);
  EXPECT_FALSE(v[1].contains("kernel_refused"));
  EXPECT_EQ(v[1]["denied"], 1);
  for (const char* k : {"opens", "brokered", "handler_faults", "allowed_unread", "us_per_ioctl",
                        "us_per_ioctl_phases", "p50_us", "p99_us", "deadline_failures", "degraded",
                        "stuck", "observer_lost", "fds_watched"})
    EXPECT_TRUE(v[0].contains(k)) << k;
}

TEST(ControlAnswer, VerbsReachTheRegistry) {
  TwoContainers agent;
  EXPECT_EQ(control_answer("drain team-a", agent), "{\"draining\":true,\"id\":\"team-a\"}\n");
  EXPECT_EQ(agent.drained, "team-a");
  EXPECT_EQ(control_answer("drain nobody", agent), "{\"error\":\"no such container\"}\n");
  EXPECT_FALSE(agent.drained_all);
  EXPECT_EQ(control_answer("drain", agent), "{\"draining\":true,\"containers\":2}\n");
  EXPECT_TRUE(agent.drained_all);
  EXPECT_EQ(control_answer("judge-pending 77 team-b", agent), "{\"judged\":\"pending\"}\n");
  EXPECT_EQ(agent.pending_args, "77 team-b");
}

TEST(ControlAnswer, AnUnknownCommandSaysWhatIsExpected) {
  TwoContainers agent;
  const auto v = lines(control_answer("rm -rf /", agent));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0]["error"].get<std::string>().find("expected list, stats, drain"),
            std::string::npos);
  EXPECT_FALSE(agent.drained_all);
}

}  // namespace
}  // namespace gdrproxy::proxy
