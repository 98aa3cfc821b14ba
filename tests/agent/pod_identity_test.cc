// The Kubernetes pod and container a bundle's CRI annotations name (proxy/agent/pod_identity.h),
// read as the agent reads them: from a real config.json in a bundle directory, handing its
// listener to a real socket (bundle_check.h). The pod's creator chooses these names: only strings
// of bounded length are taken, and what the log line says of them is escaped.
#include "proxy/agent/pod_identity.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/unique_fd.h"
#include "proxy/agent/bundle_check.h"

namespace gdrproxy::proxy {
namespace {

// A bundle directory with a listening socket beside it, removed at the end.
class Bundle : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gdrproxy-pod-identity-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    socket_ = dir_ + "/agent.sock";
    sock_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    socket_.copy(a.sun_path, sizeof a.sun_path - 1);
    ASSERT_EQ(::bind(sock_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes config.json handing the listener to the socket, with these annotations (when given),
  // and reads it as the agent does.
  PodIdentity read(const nlohmann::json* annotations) {
    nlohmann::json config = {{"ociVersion", "1.0.2"},
                             {"linux", {{"seccomp", {{"listenerPath", socket_}}}}}};
    if (annotations) config["annotations"] = *annotations;
    std::ofstream(dir_ + "/config.json") << config.dump();
    std::string why;
    PodIdentity pod;
    pod.pod_name = "left from before";
    EXPECT_TRUE(bundle_hands_listener_to(dir_, socket_, "", why, nullptr, &pod)) << why;
    return pod;
  }

  std::string dir_, socket_;
  UniqueFd sock_;
};

TEST_F(Bundle, CriAnnotationsNameThePodAndItsContainer) {
  const nlohmann::json a = {{"io.kubernetes.cri.sandbox-namespace", "gdrproxy-test"},
                            {"io.kubernetes.cri.sandbox-name", "three"},
                            {"io.kubernetes.cri.sandbox-id", "0123abcd"},
                            {"io.kubernetes.cri.container-name", "app0"},
                            {"io.kubernetes.cri.container-type", "container"},
                            {"org.example.other", "ignored"}};
  const PodIdentity p = read(&a);
  EXPECT_EQ(p.pod_namespace, "gdrproxy-test");
  EXPECT_EQ(p.pod_name, "three");
  EXPECT_EQ(p.pod_id, "0123abcd");
  EXPECT_EQ(p.container, "app0");
  EXPECT_EQ(p.kind, "container");
  EXPECT_FALSE(p.empty());
  EXPECT_EQ(pod_identity_said(p), " pod gdrproxy-test/three container app0");
}

TEST_F(Bundle, ABundleWithoutCriAnnotationsNamesNothing) {
  EXPECT_TRUE(read(nullptr).empty());
  const nlohmann::json docker = {{"org.opencontainers.image.ref.name", "x"}};
  EXPECT_TRUE(read(&docker).empty());
  const nlohmann::json not_an_object = nlohmann::json::array({"io.kubernetes.cri.sandbox-name"});
  EXPECT_TRUE(read(&not_an_object).empty());
  EXPECT_EQ(pod_identity_said(PodIdentity{}), "");
}

TEST_F(Bundle, OnlyBoundedStringsAreTaken) {
  const std::string longest(kMaxPodIdentityValue, 'n');
  const nlohmann::json a = {{"io.kubernetes.cri.sandbox-namespace", 7},
                            {"io.kubernetes.cri.sandbox-name", longest + "n"},
                            {"io.kubernetes.cri.sandbox-id", {{"nested", "object"}}},
                            {"io.kubernetes.cri.container-name", longest},
                            {"io.kubernetes.cri.container-type", "root"}};
  const PodIdentity p = read(&a);
  EXPECT_EQ(p.pod_namespace, "");  // a number
  EXPECT_EQ(p.pod_name, "");       // one byte too long
  EXPECT_EQ(p.pod_id, "");         // an object
  EXPECT_EQ(p.container, longest);
  EXPECT_EQ(p.kind, "");  // neither "sandbox" nor "container"
  const nlohmann::json sandbox = {{"io.kubernetes.cri.container-type", "sandbox"},
                                  {"io.kubernetes.cri.container-name", nullptr}};
  const PodIdentity s = read(&sandbox);
  EXPECT_EQ(s.kind, "sandbox");
  EXPECT_EQ(s.container, "");
}

TEST_F(Bundle, HostileNamesAreCarriedAsTheyAreAndSaidEscaped) {
  const nlohmann::json a = {
      {"io.kubernetes.cri.sandbox-namespace", "ns\ngdrproxy agent: container forged"},
      {"io.kubernetes.cri.sandbox-name", "\x1b]0;title\x07\x1b[2J"},
      {"io.kubernetes.cri.container-name", std::string("nul\0byte\xc3\xa9", 10)}};
  const PodIdentity p = read(&a);
  EXPECT_EQ(p.pod_namespace, "ns\ngdrproxy agent: container forged");
  EXPECT_EQ(p.pod_name, "\x1b]0;title\x07\x1b[2J");
  const std::string said = pod_identity_said(p);
  EXPECT_EQ(said,
            " pod ns\\x0agdrproxy agent: container forged/\\x1b]0;title\\x07\\x1b[2J container "
            "nul\\x00byte\\xc3\\xa9");
  for (const char c : said) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << int(c);
}

TEST_F(Bundle, ARefusedBundleLeavesThePodAlone) {
  const nlohmann::json a = {{"io.kubernetes.cri.sandbox-name", "three"}};
  nlohmann::json config = {{"annotations", a},
                           {"linux", {{"seccomp", {{"listenerPath", "/nowhere"}}}}}};
  std::ofstream(dir_ + "/config.json") << config.dump();
  std::string why;
  PodIdentity pod;
  EXPECT_FALSE(bundle_hands_listener_to(dir_, socket_, "", why, nullptr, &pod));
  EXPECT_TRUE(pod.empty());
}

}  // namespace
}  // namespace gdrproxy::proxy
