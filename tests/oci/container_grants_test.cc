// One container's grant set and what it becomes in a bundle: the metadata line the agent reads
// back, and device cgroup rules that deny every guarded number before allowing the granted ones
// (the runtimes apply rules in order, the last match wins).
#include <gtest/gtest.h>
#include <sys/sysmacros.h>

#include "proxy/oci/container_grants.h"

namespace gdrproxy::proxy {
namespace {

TEST(ContainerGrants, MetadataLineRoundTripsAndReplacesAnOldOne) {
  const std::string m =
      metadata_with_grants("job=42\ngdrproxy-grants=nvidia0", {"uverbs0", "rdma_cm"});
  EXPECT_EQ(m, "job=42\ngdrproxy-grants=uverbs0,rdma_cm");
  EXPECT_EQ(*grants_in_metadata(m), (std::vector<std::string>{"uverbs0", "rdma_cm"}));
  EXPECT_FALSE(grants_in_metadata("job=42"));
  EXPECT_TRUE(grants_in_metadata("gdrproxy-grants=")->empty());
}

TEST(ContainerGrants, CgroupRulesDenyEveryGuardedNumberThenAllowOnlyTheGranted) {
  // The stand-in catalog of a test host has no registered RDMA or NVIDIA driver: the fixed
  // majors are denied anyway.
  ContainerGrants g;
  g.nodes.push_back(
      {"/dev/infiniband/uverbs0", "uverbs0", DeviceClass::kUverbs, makedev(231, 0), true});
  g.nodes.push_back(
      {"/dev/nvidia0", "nvidia0", DeviceClass::kNvidiaFrontend, makedev(195, 0), true});
  const nlohmann::json rules = g.cgroup_rules(DeviceCatalog{});
  ASSERT_GE(rules.size(), 4u);
  size_t first_allow = rules.size();
  bool denies_uverbs_major = false, denies_nvidia_major = false;
  for (size_t i = 0; i < rules.size(); ++i) {
    const auto& r = rules[i];
    if (r["allow"] == true) {
      first_allow = std::min(first_allow, i);
    } else {
      EXPECT_EQ(first_allow, rules.size()) << "a deny after an allow: " << r.dump();
      if (!r.contains("minor") && r["major"] == 231) denies_uverbs_major = true;
      if (!r.contains("minor") && r["major"] == 195) denies_nvidia_major = true;
    }
  }
  EXPECT_TRUE(denies_uverbs_major);
  EXPECT_TRUE(denies_nvidia_major);
  EXPECT_EQ(rules[rules.size() - 2],
            (nlohmann::json{
                {"allow", true}, {"type", "c"}, {"major", 231}, {"minor", 0}, {"access", "rwm"}}));
  // The agent opens NVIDIA nodes: the container may only have its node made.
  EXPECT_EQ(rules.back()["access"], "m");
  EXPECT_EQ(g.spec_devices().size(), 2u);
}

}  // namespace
}  // namespace gdrproxy::proxy
