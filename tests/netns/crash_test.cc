// Crash safety: `move` killed after a random step (GDRPROXY_NETNS_FAULT_AFTER of gdrproxy-testkit
// netns, an abrupt _exit with no rollback), sometimes followed by the death of the container
// namespace, and sometimes by a `restore` that is itself killed part way; the next `restore`
// (gdrproxy's own) must bring the host back exactly, every time.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <regex>

#include "test_env.h"

namespace gdrproxy::netns::test {
namespace {

TEST(CrashSafety, HundredRandomTrialsRestoreTheHostExactly) {
  HostTopology t(4);
  ScopedDir dir;
  auto ifaces = t.rail_names();
  ifaces.push_back("eth0");
  const std::string original = dump_state(t.host, ifaces);
  const std::string journal = dir.path() + "/j.json";
  auto move = [&](const ScopedNetns& c, const std::string& env) {
    return sh(t.host.exec() + "env " + env + " " + testkit() + " netns move --netns " + c.path() +
              " --ifaces " + t.rail_list() + " --journal " + journal);
  };
  auto restore = [&] {
    return sh(t.host.exec() + gdrproxy() + " netns restore --journal " + journal);
  };

  // Count the steps of a full move.
  int steps = 0;
  {
    ScopedNetns c("gcc");
    CmdResult r = move(c, "GDRPROXY_NETNS_TRACE_STEPS=1");
    ASSERT_EQ(r.status, 0) << r.out;
    std::regex step("^step ([0-9]+): ", std::regex::multiline);
    for (std::sregex_iterator it(r.out.begin(), r.out.end(), step), end; it != end; ++it)
      steps = std::max(steps, std::stoi((*it)[1]));
    ASSERT_EQ(restore().status, 0);
    std::filesystem::remove(journal + ".done");
    ASSERT_EQ(settle_to(t.host, ifaces, original), original);
  }
  ASSERT_GE(steps, 4 * 6) << "expected fault points between every step of every rail";
  // The shipped binary has no fault points: it reads neither variable.
  {
    ScopedNetns c("gcc");
    CmdResult r =
        sh(t.host.exec() + "env GDRPROXY_NETNS_FAULT_AFTER=1 GDRPROXY_NETNS_TRACE_STEPS=1 " +
           gdrproxy() + " netns move --netns " + c.path() + " --ifaces " + t.rail_list() +
           " --journal " + journal);
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(r.out.find("step 1:"), std::string::npos) << r.out;
    ASSERT_EQ(restore().status, 0);
    std::filesystem::remove(journal + ".done");
    ASSERT_EQ(settle_to(t.host, ifaces, original), original);
  }

  std::mt19937 rng(std::random_device{}());
  int differences = 0;
  for (int trial = 0; trial < 100; ++trial) {
    int k = std::uniform_int_distribution<int>(1, steps)(rng);
    int death =
        std::uniform_int_distribution<int>(0, 2)(rng);  // 0: lives, 1: dies, 2: dies + rename
    ScopedNetns c("gcc");
    CmdResult m = move(c, "GDRPROXY_NETNS_FAULT_AFTER=" + std::to_string(k));
    ASSERT_EQ(m.status, 86) << "trial " << trial << " step " << k << ": " << m.out;
    if (death) {
      // The namespace dies. Physical NICs go back to the host unconfigured (veth would be
      // destroyed), so the test hands them back as the kernel would, then deletes it.
      std::string links = sh(c.ip() + "-o link show").out;
      for (int i = 0; i < t.rails; ++i) {
        std::string r = "rdma" + std::to_string(i);
        if (links.find(" " + r + "@") == std::string::npos) continue;
        std::string rename = death == 2 && i % 2 ? " name dev" + std::to_string(i) : "";
        must(c.ip() + "link set " + r + " netns " + t.host.name() + rename);
      }
      c.destroy();
    }
    if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) {
      // restore itself crashes part way; the next restore must still get everything right.
      int kr = std::uniform_int_distribution<int>(1, 30)(rng);
      CmdResult first = sh(t.host.exec() + "env GDRPROXY_NETNS_FAULT_AFTER=" + std::to_string(kr) +
                           " " + testkit() + " netns restore --journal " + journal);
      EXPECT_TRUE(first.status == 86 || first.status == 0) << first.out;
    }
    CmdResult r = restore();
    EXPECT_EQ(r.status, 0) << "trial " << trial << " step " << k << " death " << death << ": "
                           << r.out;
    std::string now = settle_to(t.host, ifaces, original);
    if (now != original) {
      ++differences;
      ADD_FAILURE() << "trial " << trial << " (fault after step " << k << ", death " << death
                    << ") left the host different:\n--- original\n"
                    << original << "\n--- now\n"
                    << now;
    }
    std::filesystem::remove(journal + ".done");
    std::filesystem::remove(journal);
  }
  EXPECT_EQ(differences, 0);
}

}  // namespace
}  // namespace gdrproxy::netns::test
