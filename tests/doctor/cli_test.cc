// The `gdrproxy doctor` binary end to end: --json, exit status 0/1/2, --peer on its own report,
// --pid reading a live process's environment.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
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

// The whole doctor with no option finishes within its 5 s budget (the library probe included),
// the probe is labelled as such, two live ranks' boot ids are compared, and --help teaches it.
TEST(DoctorCli, ProbeBootIdsVersionsAndHelpEndToEnd) {
  TempTree t;
  const std::string bin = GDRPROXY_BIN;
  const auto start = std::chrono::steady_clock::now();
  const int rc = shell(bin + " doctor > " + t.path("all.txt"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_GE(rc, 0);
  std::ifstream all(t.path("all.txt"));
  std::string text((std::istreambuf_iterator<char>(all)), {});
  EXPECT_NE(text.find("lib.probe.dlopen"), std::string::npos) << text;
  EXPECT_NE(text.find("not a live rank"), std::string::npos) << text;

  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const int rc2 = shell(bin + " doctor --only container --pid " + std::to_string(::getpid()) +
                        " --pid " + std::to_string(child) + " --json > " + t.path("c.json"));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_GE(rc2, 0);
  std::ifstream c(t.path("c.json"));
  Json j = Json::parse(c);
  bool boot = false;
  for (const auto& k : j["checks"])
    if (k["id"] == "container.ranks_boot_id") boot = k["status"] == "PASS";
  EXPECT_TRUE(boot) << j.dump(2);
  EXPECT_EQ(j["facts"]["ranks_boot_id"][std::to_string(child)], j["facts"]["host"]["boot_id"]);

  t.write("rootfs/etc/gdrproxy-workload/versions", "UCX_VERSION=v1.20.0\n");
  EXPECT_EQ(
      shell(bin + " doctor --only image --rootfs " + t.path("rootfs") + " > " + t.path("img.txt")),
      1);
  std::ifstream img(t.path("img.txt"));
  text.assign(std::istreambuf_iterator<char>(img), {});
  EXPECT_NE(text.find("WARN  image.version.ucx"), std::string::npos) << text;
  EXPECT_NE(text.find("no pid namespace in cuda_ipc rkeys"), std::string::npos) << text;

  EXPECT_EQ(shell(bin + " doctor --help > " + t.path("help.txt")), 0);
  std::ifstream help(t.path("help.txt"));
  text.assign(std::istreambuf_iterator<char>(help), {});
  for (const char* taught : {"NCCL_P2P_LEVEL", "1=PIX", "probe child", "boot id",
                             "rdma-core provider", "Reference workload image", "UCX 1."})
    EXPECT_NE(text.find(taught), std::string::npos) << taught << "\n" << text;
}

}  // namespace
}  // namespace gdrproxy::doctor
