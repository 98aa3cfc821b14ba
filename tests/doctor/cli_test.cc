// The `gdrproxy doctor` binary end to end: --json, exit status 0/1/2, --peer on its own report,
// --pid reading a live process's environment.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "tests/doctor/fixture.h"

namespace gdrproxy::doctor {
namespace {
using testing::add_hca;
using testing::ipv4_gid;
using testing::TempTree;
using Json = nlohmann::json;

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

// --pid: NCCL settings come from the process's own environment, not the doctor's.
TEST(DoctorCli, PidEnvironmentIsTheOneChecked) {
  TempTree t;
  add_hca(t, "mlx5_0", "doctorrail0", {{3, ipv4_gid("10.0.0.1"), "RoCE v2"}});
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char* argv[] = {const_cast<char*>("sleep"), const_cast<char*>("30"), nullptr};
    char* envp[] = {const_cast<char*>("NCCL_IB_HCA=mlx4_0"), nullptr};
    ::execve("/bin/sleep", argv, envp);
    ::_exit(127);
  }
  // Wait until the child's environ is the new program's.
  std::string environ;
  for (int i = 0; i < 200 && environ.find("NCCL_IB_HCA") == std::string::npos; ++i) {
    ::usleep(10000);
    std::ifstream in("/proc/" + std::to_string(child) + "/environ");
    environ.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string out = t.path("out.txt");
  const int rc =
      shell("env -i " + std::string(GDRPROXY_BIN) + " doctor --sysfs-root " + t.path("sys") +
            " --only nccl,lib --pid " + std::to_string(child) + " > " + out);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(rc, 2);
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("NCCL_IB_HCA=\"mlx4_0\" (environ of pid " + std::to_string(child) + ")"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("lib." + std::to_string(child) + ".mapped"), std::string::npos) << text;
}

}  // namespace
}  // namespace gdrproxy::doctor
