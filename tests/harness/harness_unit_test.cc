// The harness's pieces without a cluster: the launcher's environment, the plan file, who holds a
// node's rails (owner files: a live process, a zombie, a reused pid), the environment a run gives
// CMD, and the ibdev-to-uverbs lookup on a made-up sysfs tree. The idea not to miss: liveness is
// tested on real processes of this test (a child left a zombie, a record whose start time is not
// the pid's), not on stand-ins.
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/file_io.h"
#include "base/owner_file.h"
#include "harness/command_env.h"
#include "harness/identity.h"
#include "harness/output.h"
#include "harness/plan.h"
#include "harness/run_dir.h"
#include "netns/rdma_sysfs.h"

namespace gdrproxy::harness {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/harness-unit.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// ---- identity ----------------------------------------------------------------------------------

TEST(Identity, SlurmWinsOverOpenMpiAndNamesTheNodeBySlurmd) {
  const Identity id = identify({{"SLURM_PROCID", "3"},
                                {"SLURM_LOCALID", "1"},
                                {"SLURM_NODEID", "2"},
                                {"SLURMD_NODENAME", "gpu07"},
                                {"OMPI_COMM_WORLD_RANK", "9"}},
                               "host1");
  EXPECT_EQ(id.launcher, "slurm");
  EXPECT_EQ(id.rank, "3");
  EXPECT_EQ(id.local_rank, "1");
  EXPECT_EQ(id.node_index, "2");
  EXPECT_EQ(id.node, "gpu07");
  EXPECT_EQ(id.paths.state, "/run/gdr-harness/gpu07");
  EXPECT_EQ(id.paths.journal, "/run/gdr-harness/gpu07/run/journal.json");
  EXPECT_EQ(identity_line(id),
            "node gpu07 (host host1), launcher slurm node index 2 rank 3 local rank 1");
}

TEST(Identity, SlurmNodeIdAloneIsSlurmAndAnEmptyVariableIsUnset) {
  const Identity id = identify({{"SLURM_PROCID", ""}, {"SLURM_NODEID", "0"}}, "h");
  EXPECT_EQ(id.launcher, "slurm");
  EXPECT_EQ(id.rank, "");
  const Identity none = identify({{"SLURM_PROCID", ""}, {"GDR_HARNESS_NODE", ""}}, "h");
  EXPECT_EQ(none.launcher, "none");
  EXPECT_EQ(none.node, "h");
  EXPECT_EQ(identity_line(none), "node h (host h)");
}

TEST(Identity, OpenMpiThenPmix) {
  const Identity o = identify({{"OMPI_COMM_WORLD_RANK", "5"},
                               {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                               {"OMPI_COMM_WORLD_NODE_RANK", "1"},
                               {"PMIX_RANK", "7"}},
                              "h");
  EXPECT_EQ(o.launcher, "openmpi");
  EXPECT_EQ(o.rank, "5");
  EXPECT_EQ(o.node_index, "1");
  const Identity p = identify({{"PMIX_RANK", "7"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}}, "h");
  EXPECT_EQ(p.launcher, "pmix");
  EXPECT_EQ(p.rank, "7");
  EXPECT_EQ(p.local_rank, "2");
  EXPECT_EQ(p.node_index, "");
}

TEST(Identity, NodeNameIsKeptToASafeAlphabetAndStateMayMove) {
  const Identity id = identify({{"GDR_HARNESS_NODE", "a b/../c\n"},
                                {"SLURMD_NODENAME", "ignored"},
                                {"GDR_HARNESS_STATE", "/srv/st"}},
                               "h");
  EXPECT_EQ(id.node, "a_b_.._c_");
  EXPECT_TRUE(id.state_from_env);
  EXPECT_EQ(id.paths.plan, "/srv/st/plan.json");
  EXPECT_EQ(id.paths.ctr_netns, "/srv/st/run/netns");
  EXPECT_THROW(identify({{"GDR_HARNESS_NODE", ".."}}, "h"), Failure);
  EXPECT_THROW(identify({}, "."), Failure);
}

// ---- plan --------------------------------------------------------------------------------------

Plan sample_plan() {
  Plan p;
  p.node = "n1";
  p.host = "h1";
  p.created = "2026-01-01T00:00:00Z";
  p.launcher = "slurm";
  p.rank = "0";
  p.rails = {{"ens2", "mlx5_1", 1u, 3, {"198.51.100.2"}},
             {"ens1", "mlx5_0", 1u, std::nullopt, {"198.51.100.1"}},
             {"veth0", "", std::nullopt, std::nullopt, {}}};
  p.nccl_ib_hca = "=mlx5_0:1,mlx5_1:1";
  p.bootstrap_iface = "eth0";
  p.sysfs_tree = "/st/sysfs/tree";
  p.sysfs_mount_plan = "/st/sysfs/mount-plan.json";
  return p;
}

TEST(Plan, RoundTripsWithNullsWhereNothingIs) {
  const Plan p = sample_plan();
  const auto j = plan_to_json(p);
  EXPECT_EQ(j["format"], 1);
  EXPECT_TRUE(j["rails"][2]["ibdev"].is_null());
  EXPECT_TRUE(j["rails"][2]["port"].is_null());
  EXPECT_TRUE(j["rails"][1]["gid_index"].is_null());
  EXPECT_EQ(j["launcher"]["name"], "slurm");
  const Plan q = plan_from_json(j, "x");
  EXPECT_EQ(q.netdevs(), (std::vector<std::string>{"ens2", "ens1", "veth0"}));
  EXPECT_EQ(q.ibdevs(), (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
  EXPECT_EQ(q.rails[0].gid_index, 3);
  EXPECT_FALSE(q.rails[2].port);
  EXPECT_EQ(q.bootstrap_iface, "eth0");
  EXPECT_EQ(q.sysfs_mount_plan, "/st/sysfs/mount-plan.json");

  Plan plain = p;
  plain.sysfs_tree.clear();
  plain.bootstrap_iface.clear();
  const auto k = plan_to_json(plain);
  EXPECT_TRUE(k["sysfs"].is_null());
  EXPECT_TRUE(k["bootstrap_iface"].is_null());
  EXPECT_EQ(plan_from_json(k, "x").sysfs_mount_plan, "");
}

TEST(Plan, AFileThatIsNotAPlanOfThisFormatIsRefusedWithTheGivenStatus) {
  TempDir t;
  const std::string path = t.path() + "/plan.json";
  try {
    load_plan(path);
    FAIL() << "a missing plan was loaded";
  } catch (const Failure& f) {
    EXPECT_EQ(f.status(), 125);
    EXPECT_EQ(std::string(f.what()),
              "no plan at " + path + ": run 'gdr-harness prepare' on this node first");
  }
  auto j = plan_to_json(sample_plan());
  j["format"] = 2;
  write(path, j.dump());
  try {
    load_plan(path, 1);
    FAIL() << "a plan of format 2 was loaded";
  } catch (const Failure& f) {
    EXPECT_EQ(f.status(), 1);
    EXPECT_NE(std::string(f.what()).find("is not a gdr-harness plan of format 1"),
              std::string::npos);
  }
  write(path, "{not json");
  EXPECT_THROW(load_plan(path), Failure);
  j["format"] = 1;
  j["rails"][0].erase("netdev");
  write(path, j.dump());
  EXPECT_THROW(load_plan(path), Failure);
  save_plan(sample_plan(), path);
  EXPECT_EQ(load_plan(path).nccl_ib_hca, "=mlx5_0:1,mlx5_1:1");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

// ---- owner files -------------------------------------------------------------------------------

TEST(OwnerFile, ALiveProcessIsItsOwnerAndARecordRoundTrips) {
  TempDir t;
  const auto me = owner_record_of(::getpid());
  ASSERT_TRUE(me);
  EXPECT_FALSE(me->start.empty());
  EXPECT_TRUE(owner_alive(*me));
  write_owner_file(t.path() + "/owner", *me);
  EXPECT_EQ(read_text(t.path() + "/owner"), std::to_string(::getpid()) + " " + me->start + "\n");
  EXPECT_TRUE(owner_file_alive(t.path() + "/owner"));
}

TEST(OwnerFile, AReusedPidIsNotTheOwner) {
  // The pid is live (this test), the start time is another process's.
  const auto me = owner_record_of(::getpid());
  ASSERT_TRUE(me);
  OwnerRecord other{::getpid(), std::to_string(std::stoull(me->start) + 1)};
  EXPECT_FALSE(owner_alive(other));
  EXPECT_FALSE(owner_present(other));
}

TEST(OwnerFile, AZombieIsDeadThoughItKeepsItsPidUntilReaped) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const auto rec = owner_record_of(child);
  ASSERT_TRUE(rec);
  EXPECT_TRUE(owner_alive(*rec));
  ::kill(child, SIGKILL);
  // Not reaped: the child is a zombie until waitid(WNOWAIT) says it exited and we reap it.
  siginfo_t si{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), &si, WEXITED | WNOWAIT), 0);
  EXPECT_FALSE(owner_alive(*rec));
  EXPECT_EQ(process_start_time(child), "");
  EXPECT_TRUE(owner_present(*rec));  // still there until reaped
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  EXPECT_FALSE(owner_present(*rec));
}

TEST(OwnerFile, ACommandNameWithParenthesesAndAZDoesNotFoolTheParser) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::prctl(PR_SET_NAME, ") Z 1 (x");
    if (::write(ready[1], "r", 1) != 1) ::_exit(1);
    ::pause();
    ::_exit(0);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  const auto rec = owner_record_of(child);
  EXPECT_TRUE(rec && owner_alive(*rec));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST(OwnerFile, WhatIsNotARecordNamesNoOwner) {
  TempDir t;
  EXPECT_FALSE(read_owner_file(t.path() + "/absent"));
  write(t.path() + "/zero", "0 123\n");
  EXPECT_FALSE(read_owner_file(t.path() + "/zero"));
  write(t.path() + "/text", "hello\n");
  EXPECT_FALSE(read_owner_file(t.path() + "/text"));
  EXPECT_FALSE(owner_file_alive(t.path() + "/text"));
  EXPECT_EQ(process_start_time(0), "");
  EXPECT_EQ(process_start_time(-1), "");
}

// ---- the run directory's holders ---------------------------------------------------------------

TEST(RunDir, OwnersAreTheRunsAndTheKeysInOrderAndOnlyLiveOnesCount) {
  TempDir t;
  const StatePaths p(t.path());
  const auto me = owner_record_of(::getpid());
  ASSERT_TRUE(me);
  fs::create_directories(p.run_dir);
  write_owner_file(owner_file_of(p, "node"), *me);
  write(owner_file_of(p, "step-2.0"), "junk\n");
  write(owner_file_of(p, "rank-1"), std::to_string(::getpid()) + " 1\n");  // a reused pid
  const auto all = owners(p);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].key, "node");
  EXPECT_TRUE(all[0].alive);
  EXPECT_EQ(all[1].key, "rank-1");
  EXPECT_FALSE(all[1].alive);
  EXPECT_EQ(all[2].key, "step-2.0");
  EXPECT_EQ(all[2].record.pid, 0);
  EXPECT_EQ(alive_owner_pids(p), std::vector<pid_t>{::getpid()});
  EXPECT_EQ(owner_file_of(p, "node"), t.path() + "/run/owner");
  EXPECT_EQ(key_words("step-1.0"), "step 1.0");
  EXPECT_EQ(key_words("rank-12"), "rank 12");
  EXPECT_TRUE(valid_key("step-1.0"));
  EXPECT_FALSE(valid_key("../x"));
  EXPECT_FALSE(valid_key(""));
}

// ---- CMD's environment -------------------------------------------------------------------------

bool has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}
bool has_name(const std::vector<std::string>& env, const std::string& name) {
  return std::any_of(env.begin(), env.end(),
                     [&](const std::string& e) { return e.rfind(name + "=", 0) == 0; });
}

TEST(CommandEnvironment, CleanButForTheLaunchersAndTheLibrariesVariablesThenThePlans) {
  const Plan plan = sample_plan();
  Capture lines;
  const auto env = command_environment({{"PATH", "/bin"},
                                        {"LC_ALL", "C"},
                                        {"NCCL_ALGO", "Ring"},
                                        {"UCX_TLS", "rc"},
                                        {"NIXL_PLUGIN_DIR", "/x"},
                                        {"SLURM_PROCID", "1"},
                                        {"PMI_RANK", "1"},
                                        {"LD_PRELOAD", "/evil.so"},
                                        {"GDRPROXY", "/gp"},
                                        {"OTHER_VAR", "1"},
                                        {"NCCL_IB_HCA", "mlx5_9"},
                                        {"NCCL_SOCKET_IFNAME", "eth0"},
                                        {"NCCL_TOPO_FILE", "/etc/topo.xml"}},
                                       "n1", plan);
  for (const char* e :
       {"PATH=/bin", "LC_ALL=C", "NCCL_ALGO=Ring", "UCX_TLS=rc", "NIXL_PLUGIN_DIR=/x",
        "SLURM_PROCID=1", "PMI_RANK=1", "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1", "NCCL_SOCKET_IFNAME=eth0",
        "GDR_HARNESS_NODE=n1"})
    EXPECT_TRUE(has(env, e)) << e;
  for (const char* n : {"LD_PRELOAD", "GDRPROXY", "OTHER_VAR", "NCCL_TOPO_FILE", "NCCL_DEBUG"})
    EXPECT_FALSE(has_name(env, n)) << n;
  EXPECT_EQ(std::count_if(env.begin(), env.end(),
                          [](const std::string& e) { return e.rfind("NCCL_IB_HCA=", 0) == 0; }),
            1);
  // The caller's NCCL_IB_HCA is replaced, and said; its NCCL_SOCKET_IFNAME was the plan's.
  EXPECT_NE(lines.text().find("the caller's value 'mlx5_9' is replaced by the plan's"),
            std::string::npos);
  EXPECT_EQ(lines.text().find("NCCL_SOCKET_IFNAME:"), std::string::npos);
}

TEST(CommandEnvironment, NoRdmaDeviceNoHcaAndTopologyAndDebugOnlyWhenAsked) {
  TempDir t;
  Plan plain = sample_plan();
  plain.nccl_ib_hca.clear();
  plain.bootstrap_iface.clear();
  write(t.path() + "/topo.xml", "<system/>");
  Capture lines;
  auto env = command_environment({{"INCLUDE_NCCL_TOPO", "1"},
                                  {"NCCL_TOPO_FILE", t.path() + "/topo.xml"},
                                  {"DEBUG_ALL", "1"},
                                  {"GDR_HARNESS_LOG_DIR", "/logs"},
                                  {"NCCL_DEBUG", "WARN"}},
                                 "n1", plain);
  EXPECT_FALSE(has_name(env, "NCCL_IB_HCA"));
  EXPECT_FALSE(has_name(env, "NCCL_SOCKET_IFNAME"));
  EXPECT_NE(lines.text().find("NCCL_IB_HCA not set"), std::string::npos);
  EXPECT_TRUE(has(env, "NCCL_TOPO_FILE=" + t.path() + "/topo.xml"));
  EXPECT_TRUE(has(env, "NCCL_DEBUG=WARN"));  // the caller's own value wins
  EXPECT_FALSE(has(env, "NCCL_DEBUG=INFO"));
  EXPECT_TRUE(has(env, "NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH"));
  EXPECT_TRUE(has(env, "NCCL_DEBUG_FILE=/logs/nccl-debug.n1.%h.%p.log"));
  EXPECT_TRUE(has(env, "NCCL_TOPO_DUMP_FILE=/logs/nccl-topo.n1.xml"));
  // A topology file that does not exist, or without INCLUDE_NCCL_TOPO=1, stays out.
  env = command_environment({{"INCLUDE_NCCL_TOPO", "1"}, {"NCCL_TOPO_FILE", t.path() + "/no.xml"}},
                            "n1", plain);
  EXPECT_FALSE(has_name(env, "NCCL_TOPO_FILE"));
  env = command_environment({{"NCCL_TOPO_FILE", t.path() + "/topo.xml"}}, "n1", plain);
  EXPECT_FALSE(has_name(env, "NCCL_TOPO_FILE"));
  EXPECT_FALSE(has_name(env, "NCCL_DEBUG_SUBSYS"));
}

// ---- ibdev to uverbs ---------------------------------------------------------------------------

TEST(VerbsNodes, ByTheBusDeviceElseByTheIbdevFileOfASoftRoceNode) {
  TempDir t;
  const std::string sys = t.path();
  // mlx5_0 on a PCI function with uverbs0; rxe0 on no bus, named by uverbs3's ibdev file.
  fs::create_directories(sys + "/devices/pci0000:00/0000:00:01.0/infiniband_verbs/uverbs0");
  fs::create_directories(sys + "/class/infiniband/mlx5_0");
  fs::create_symlink(sys + "/devices/pci0000:00/0000:00:01.0",
                     sys + "/class/infiniband/mlx5_0/device");
  fs::create_directories(sys + "/class/infiniband/rxe0");
  write(sys + "/class/infiniband_verbs/uverbs3/ibdev", "rxe0\n");
  write(sys + "/class/infiniband_verbs/uverbs0/ibdev", "mlx5_0\n");
  EXPECT_EQ(netns::verbs_nodes_of_ibdev(sys, "mlx5_0"), std::vector<std::string>{"uverbs0"});
  EXPECT_EQ(netns::verbs_nodes_of_ibdev(sys, "rxe0"), std::vector<std::string>{"uverbs3"});
  EXPECT_TRUE(netns::verbs_nodes_of_ibdev(sys, "mlx5_9").empty());
  EXPECT_TRUE(netns::verbs_nodes_of_ibdev(sys, "../x").empty());
}

}  // namespace
}  // namespace gdrproxy::harness
