// container_unconfinement against the specs Docker and containerd's CRI write: --privileged and
// securityContext.privileged are refused by what they put in the spec, Docker's default
// mknod-only rule and IPC_LOCK/NET_RAW are not, and a user namespace confines.
#include "proxy/oci/container_privilege.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace gdrproxy::proxy {
namespace {

// Docker's --privileged, as dockerd 20+ writes it: every capability, one allow-all rule.
constexpr const char* kDockerPrivileged = R"({"process": {"capabilities": {
  "bounding": ["CAP_CHOWN", "CAP_MKNOD", "CAP_SYS_ADMIN", "CAP_SYS_MODULE", "CAP_SYS_RAWIO",
               "CAP_IPC_LOCK"],
  "effective": ["CAP_SYS_ADMIN"], "permitted": ["CAP_SYS_ADMIN"]}},
  "linux": {"namespaces": [{"type": "pid"}, {"type": "mount"}],
            "resources": {"devices": [{"allow": true, "access": "rwm"}]}}})";

// Docker's default: deny all, then mknod of any char or block node, then a few nodes.
constexpr const char* kDockerDefault = R"({"process": {"capabilities": {
  "bounding": ["CAP_CHOWN", "CAP_MKNOD", "CAP_NET_RAW", "CAP_IPC_LOCK"]}},
  "linux": {"resources": {"devices": [
    {"allow": false, "access": "rwm"},
    {"allow": true, "type": "c", "access": "m"},
    {"allow": true, "type": "b", "access": "m"},
    {"allow": true, "type": "c", "major": 1, "minor": 3, "access": "rwm"}]}}})";

TEST(ContainerPrivilege, DockerPrivilegedIsUnconfinedForEachReason) {
  const Unconfinement u = container_unconfinement(kDockerPrivileged, "config.json");
  ASSERT_TRUE(u.unconfined());
  EXPECT_EQ(u.joined(),
            "the device cgroup allows every device (linux.resources.devices); CAP_SYS_ADMIN; "
            "CAP_SYS_MODULE; CAP_SYS_RAWIO; CAP_MKNOD; no user namespace");
}

TEST(ContainerPrivilege, DockerDefaultWithIpcLockAndNetRawIsConfined) {
  EXPECT_FALSE(container_unconfinement(kDockerDefault, "config.json").unconfined());
}

TEST(ContainerPrivilege, AllowAllRuleAloneIsUnconfinedMknodOnlyWithIt) {
  const Unconfinement u = container_unconfinement(
      R"({"process": {"capabilities": {"bounding": ["CAP_MKNOD"]}},
          "linux": {"resources": {"devices": [{"allow": true, "type": "c", "major": -1,
                                               "access": "rw"}]}}})",
      "c");
  EXPECT_EQ(u.joined(),
            "the device cgroup allows every device (linux.resources.devices); CAP_MKNOD; no user "
            "namespace");
  // CAP_MKNOD with the default deny-all rule: only nodes the cgroup allows can be opened.
  EXPECT_FALSE(
      container_unconfinement(R"({"process": {"capabilities": {"bounding": ["CAP_MKNOD"]}}})", "c")
          .unconfined());
}

TEST(ContainerPrivilege, ALaterDenyAllTakesTheAllowAllBack) {
  EXPECT_FALSE(container_unconfinement(R"({"linux": {"resources": {"devices": [
      {"allow": true, "access": "rwm"}, {"allow": false, "access": "rwm"},
      {"allow": true, "type": "c", "major": 231, "minor": 0, "access": "rwm"}]}}})",
                                       "c")
                   .unconfined());
}

TEST(ContainerPrivilege, OneUnconfiningCapabilityInAnySet) {
  for (const char* set : {"bounding", "effective", "permitted", "inheritable", "ambient"}) {
    const std::string spec =
        std::string(R"({"process": {"capabilities": {")") + set + R"(": ["CAP_SYS_MODULE"]}}})";
    EXPECT_EQ(container_unconfinement(spec, "c").joined(), "CAP_SYS_MODULE; no user namespace")
        << set;
  }
}

TEST(ContainerPrivilege, AUserNamespaceConfines) {
  std::string spec = kDockerPrivileged;
  spec.replace(spec.find(R"({"type": "pid"})"), 15, R"({"type": "user"})");
  EXPECT_FALSE(container_unconfinement(spec, "c").unconfined());
}

TEST(ContainerPrivilege, NotAnObjectIsAnError) {
  EXPECT_THROW(container_unconfinement("[]", "c"), Error);
  EXPECT_THROW(container_unconfinement("{", "c"), Error);
}

TEST(ContainerPrivilege, TheRefusalSaysWhyAndWhatToDo) {
  const std::string line =
      unconfined_refusal(container_unconfinement(kDockerPrivileged, "c"), "uverbs0\n\x1b[31m");
  EXPECT_NE(line.find("CAP_SYS_ADMIN"), std::string::npos);
  EXPECT_NE(line.find("CAP_IPC_LOCK"), std::string::npos);
  EXPECT_NE(line.find("accept_unconfined"), std::string::npos);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.find('\x1b'), std::string::npos);
}

}  // namespace
}  // namespace gdrproxy::proxy
