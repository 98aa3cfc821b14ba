// Container checks: namespaces on fake /proc trees and on real namespaces made here, and the
// pidfd self-probe in this process and in a child whose seccomp filter refuses pidfd_getfd.
#include <gtest/gtest.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

#include "doctor/container.h"
#include "tests/doctor/fixture.h"

namespace gdrproxy::doctor {
namespace {
using testing::only_check;
using testing::TempTree;
using testing::tree_context;

Report run(const Context& c) {
  Report r;
  check_container(c, r);
  return r;
}

void fake_ns(const TempTree& t, const std::string& pid, const std::string& pidns,
             const std::string& netns) {
  t.symlink("pid:[" + pidns + "]", "proc/" + pid + "/ns/pid");
  t.symlink("net:[" + netns + "]", "proc/" + pid + "/ns/net");
  t.symlink("ipc:[4026531839]", "proc/" + pid + "/ns/ipc");
}

TEST(Container, PidNamespaceOfFakeProc) {
  TempTree t;
  t.symlink("pid:[4026531836]", "proc/self/ns/pid");
  Check k = only_check(run(tree_context(t)), "container.pid_ns");
  EXPECT_EQ(k.status, Status::Pass);
  EXPECT_NE(k.found.find("host's initial"), std::string::npos) << k.found;
  TempTree none;
  EXPECT_EQ(only_check(run(tree_context(none)), "container.pid_ns").status, Status::Warn);
}

TEST(Container, RanksInOneNetnsPassInTwoFail) {
  TempTree t;
  fake_ns(t, "100", "4026532001", "4026532100");
  fake_ns(t, "101", "4026532001", "4026532100");
  fake_ns(t, "102", "4026532002", "4026532200");
  Context c = tree_context(t);
  c.pids = {100, 101};
  Report same = run(c);
  EXPECT_EQ(only_check(same, "container.ranks_net_ns").status, Status::Pass);
  EXPECT_EQ(only_check(same, "container.ranks_pid_ns").status, Status::Pass);
  c.pids = {100, 102};
  Report split = run(c);
  EXPECT_EQ(only_check(split, "container.ranks_net_ns").status, Status::Fail);
  EXPECT_EQ(only_check(split, "container.ranks_pid_ns").status, Status::Warn);
}

TEST(Container, RealProcessInAnotherNetworkNamespaceFails) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char ok = ::unshare(CLONE_NEWNET) == 0 ? 'y' : 'n';
    (void)!::write(ready[1], &ok, 1);
    ::pause();
    ::_exit(0);
  }
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y') << "unshare(CLONE_NEWNET) needs root";
  Context c = node_context();
  c.pids = {static_cast<int>(::getpid()), static_cast<int>(child)};
  Report r = run(c);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  EXPECT_EQ(only_check(r, "container.ranks_net_ns").status, Status::Fail) << r.to_text();
  EXPECT_EQ(only_check(r, "container.ranks_pid_ns").status, Status::Pass) << r.to_text();
}

const char* const kBootA = "3b0c1a5e-7d1f-4f3e-9a61-5d1e2c3b4a01";
const char* const kBootB = "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b10";

// Rank `pid` whose root's /proc shows boot id `id` ("" = no such file in its root).
void rank_boot_id(const TempTree& t, const std::string& pid, const std::string& id) {
  t.mkdir("proc/" + pid + "/root");
  if (!id.empty()) t.write("proc/" + pid + "/root/proc/sys/kernel/random/boot_id", id + "\n");
}

TEST(Container, RanksWithOneBootIdPassWithTwoFail) {
  TempTree t;
  t.write("proc/sys/kernel/random/boot_id", std::string(kBootA) + "\n");
  rank_boot_id(t, "100", kBootA);
  rank_boot_id(t, "101", "");  // its own /proc not visible: the doctor's is used
  rank_boot_id(t, "102", kBootB);
  Context c = tree_context(t);
  c.pids = {100, 101};
  Report same = run(c);
  Check k = only_check(same, "container.ranks_boot_id");
  EXPECT_EQ(k.status, Status::Pass) << k.found;
  EXPECT_NE(k.found.find("101=\"" + std::string(kBootA) + "\" (the doctor's /proc)"),
            std::string::npos)
      << same.to_text();
  EXPECT_EQ(same.facts()["ranks_boot_id"]["100"], kBootA);

  c.pids = {100, 102};
  Report split = run(c);
  k = only_check(split, "container.ranks_boot_id");
  EXPECT_EQ(k.status, Status::Fail) << k.found;
  EXPECT_NE(k.found.find("102=\"" + std::string(kBootB) + "\" (its root)"), std::string::npos)
      << k.found;
  EXPECT_EQ(split.facts()["ranks_boot_id"]["102"], kBootB);
  EXPECT_EQ(split.facts()["host"]["boot_id"], kBootA);

  // NCCL_HOSTID in every rank replaces hostname + boot id: the difference no longer matters.
  for (const char* pid : {"100", "102"})
    t.write(std::string("proc/") + pid + "/environ", std::string("NCCL_HOSTID=node7") + '\0');
  EXPECT_EQ(only_check(run(c), "container.ranks_boot_id").status, Status::Pass);
}

TEST(Container, RanksAgreeingOnAFakeBootIdWarn) {
  TempTree t;
  t.write("proc/sys/kernel/random/boot_id", std::string(kBootA) + "\n");
  rank_boot_id(t, "100", kBootB);
  rank_boot_id(t, "101", kBootB);
  Context c = tree_context(t);
  c.pids = {100, 101};
  Check k = only_check(run(c), "container.ranks_boot_id");
  EXPECT_EQ(k.status, Status::Warn) << k.found;
  EXPECT_NE(k.found.find("a faked boot id"), std::string::npos) << k.found;
}

// This process and its child, seen through the real /proc: one kernel, one boot id.
TEST(Container, RealProcessesShareTheKernelsBootId) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  Context c = node_context();
  c.pids = {static_cast<int>(::getpid()), static_cast<int>(child)};
  Report r = run(c);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  Check k = only_check(r, "container.ranks_boot_id");
  EXPECT_EQ(k.status, Status::Pass) << r.to_text();
  EXPECT_NE(k.found.find("this kernel's boot id"), std::string::npos) << k.found;
}

TEST(Container, PidfdGetfdWorksHere) {
  TempTree t;
  Report r = run(tree_context(t));
  EXPECT_EQ(only_check(r, "container.pidfd_open").status, Status::Pass);
  EXPECT_EQ(only_check(r, "container.pidfd_getfd").status, Status::Pass);
}

TEST(Container, PidfdGetfdRefusedBySeccompFails) {
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Docker's default profile without CAP_SYS_PTRACE: pidfd_getfd gets EPERM.
    scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
    if (!f || seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(pidfd_getfd), 0) != 0 ||
        seccomp_load(f) != 0)
      ::_exit(3);
    TempTree t;
    Report r = run(tree_context(t));
    char verdict = 'x';
    for (const auto& k : r.checks())
      if (k.id == "container.pidfd_getfd")
        verdict =
            k.status == Status::Fail && k.found.find("Operation not permitted") != std::string::npos
                ? 'F'
                : 'P';
    (void)!::write(out[1], &verdict, 1);
    ::_exit(0);
  }
  ::close(out[1]);
  char verdict = 0;
  ASSERT_EQ(::read(out[0], &verdict, 1), 1);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(out[0]);
  EXPECT_EQ(verdict, 'F');
}

TEST(Container, YamaScopeOneWarns) {
  TempTree t;
  t.write("proc/sys/kernel/yama/ptrace_scope", "1\n");
  EXPECT_EQ(only_check(run(tree_context(t)), "container.yama").status, Status::Warn);
  t.write("proc/sys/kernel/yama/ptrace_scope", "0\n");
  EXPECT_EQ(only_check(run(tree_context(t)), "container.yama").status, Status::Pass);
}

}  // namespace
}  // namespace gdrproxy::doctor
