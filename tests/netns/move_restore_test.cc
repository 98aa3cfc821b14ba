// End-to-end move/restore on real namespaces: what the container gets, and that the host comes
// back exactly; plus every kind of bad input, which must leave the host untouched.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "netns/journal.h"
#include "netns/profile.h"
#include "test_env.h"

namespace gdrproxy::netns::test {
namespace {

using nlohmann::json;

std::string move_cmd(const HostTopology& t, const ScopedNetns& c, const std::string& journal,
                     const std::string& extra = "") {
  return t.host.exec() + gdrproxy() + " netns move --netns " + c.path() + " --ifaces " +
         t.rail_list() + " --journal " + journal + " " + extra;
}

std::string restore_cmd(const HostTopology& t, const std::string& journal) {
  return t.host.exec() + gdrproxy() + " netns restore --journal " + journal;
}

std::string sysctl_in(const ScopedNetns& ns, const std::string& iface, const std::string& key) {
  return sh(ns.exec() + "cat /proc/sys/net/ipv4/conf/" + iface + "/" + key).out;
}

TEST(MoveRestore, ContainerGetsEverythingAndHostComesBackExactly) {
  HostTopology t(4);
  ScopedNetns c("gnc");
  ScopedDir dir;
  const std::string journal = dir.path() + "/j.json";
  auto ifaces = t.rail_names();
  ifaces.push_back("eth0");
  const std::string before = dump_state(t.host, ifaces);

  must(move_cmd(t, c, journal));

  // Inside: addresses (secondary and IPv6 included), MTU, up, routes of every table, the host's
  // rules that use the rails, and the per-rail source routing of the multirail profile.
  json addrs = json::parse(sh(c.ip() + "-j addr").out);
  std::map<std::string, json> by_name;
  for (const auto& l : addrs) by_name[l["ifname"]] = l;
  for (int i = 0; i < 4; ++i) {
    std::string r = "rdma" + std::to_string(i);
    ASSERT_TRUE(by_name.count(r)) << r << " not in container";
    EXPECT_EQ(by_name[r]["mtu"], 4200);
    EXPECT_NE(std::find(by_name[r]["flags"].begin(), by_name[r]["flags"].end(), "UP"),
              by_name[r]["flags"].end());
    bool has_v4 = false;
    for (const auto& a : by_name[r]["addr_info"])
      has_v4 = has_v4 || a["local"] == "192.0.2." + std::to_string(10 + i);
    EXPECT_TRUE(has_v4) << r;
    EXPECT_EQ(sysctl_in(c, r, "arp_ignore"), "1\n");
    EXPECT_EQ(sysctl_in(c, r, "arp_announce"), "2\n");
    EXPECT_EQ(sysctl_in(c, r, "arp_filter"), "1\n");
    EXPECT_EQ(sysctl_in(c, r, "rp_filter"), "1\n");
    std::string table = sh(c.ip() + "route show table " + std::to_string(1000 + i)).out;
    EXPECT_NE(table.find("192.0.2.0/24 dev " + r), std::string::npos) << table;
  }
  EXPECT_FALSE(by_name.count("eth0")) << "eth0 must stay on the host";
  std::string rdma0 = sh(c.ip() + "addr show dev rdma0").out;
  EXPECT_NE(rdma0.find("192.0.2.200/24"), std::string::npos) << rdma0;
  EXPECT_NE(rdma0.find("2001:db8::10/64"), std::string::npos) << rdma0;
  EXPECT_NE(sh(c.ip() + "route").out.find("203.0.113.0/25 via 192.0.2.1 dev rdma0 metric 50"),
            std::string::npos);
  EXPECT_NE(
      sh(c.ip() + "route show table 100").out.find("203.0.113.128/25 via 192.0.2.1 dev rdma1"),
      std::string::npos);
  EXPECT_NE(sh(c.ip() + "-6 route").out.find("2001:db8:1::/64 via 2001:db8::1 dev rdma0"),
            std::string::npos);
  std::string rules = sh(c.ip() + "rule").out;
  for (int i = 0; i < 4; ++i)
    EXPECT_NE(rules.find(std::to_string(1000 + i) + ":\tfrom 192.0.2." + std::to_string(10 + i) +
                         " lookup " + std::to_string(1000 + i)),
              std::string::npos)
        << rules;
  EXPECT_NE(rules.find("500:\tfrom 192.0.2.11 lookup 100"), std::string::npos) << rules;
  EXPECT_NE(rules.find("501:\tfrom all iif rdma1 lookup 100"), std::string::npos) << rules;
  // The host lost the rails meanwhile.
  EXPECT_NE(sh(t.host.ip() + "link show rdma0").status, 0);

  must(restore_cmd(t, journal));
  EXPECT_EQ(settle_to(t.host, ifaces, before), before);
  std::string left = sh(c.ip() + "rule").out;
  EXPECT_EQ(left.find("lookup 100"), std::string::npos) << "rules left in the container:\n" << left;
  EXPECT_EQ(left.find("lookup 1000"), std::string::npos) << "rules left in the container:\n"
                                                         << left;

  // Idempotent: a second restore changes nothing and succeeds.
  must(restore_cmd(t, journal));
  EXPECT_EQ(settle_to(t.host, ifaces, before), before);
}

TEST(MoveRestore, RestoreAfterTargetNamespaceIsGoneAndKernelRenamedTheDevice) {
  HostTopology t(2);
  ScopedNetns c("gnc");
  ScopedDir dir;
  const std::string journal = dir.path() + "/j.json";
  const std::string before = dump_state(t.host, t.rail_names());
  must(move_cmd(t, c, journal));
  // A physical NIC goes back to the initial namespace when its namespace dies, unconfigured and
  // renamed "devN" if its name is taken there. veth is destroyed instead, so the test plays the
  // kernel's part: hand the devices back unconfigured (one renamed), then delete the namespace.
  must(c.ip() + "link set rdma0 netns " + t.host.name() + " name dev7");
  must(c.ip() + "link set rdma1 netns " + t.host.name());
  c.destroy();
  must(restore_cmd(t, journal));
  EXPECT_EQ(settle_to(t.host, t.rail_names(), before), before);
}

TEST(MoveRestore, VethDestroyedWithItsNamespaceIsReportedByName) {
  HostTopology t(2);
  ScopedNetns c("gnc");
  ScopedDir dir;
  const std::string journal = dir.path() + "/j.json";
  must(move_cmd(t, c, journal));
  c.destroy();  // veth rails die with the namespace
  CmdResult r = sh(restore_cmd(t, journal));
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("rdma0: not found"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rdma1: not found"), std::string::npos) << r.out;
  // Rules outlive interfaces (the kernel marks them detached); restore keeps exactly one.
  std::string rules = sh(t.host.ip() + "rule").out;
  size_t at = rules.find("501:\tfrom all iif rdma1 [detached] lookup 100");
  EXPECT_NE(at, std::string::npos) << rules;
  EXPECT_EQ(rules.find("iif rdma1", at + 40), std::string::npos) << rules;
}

// A process with its own network namespace (what a container runtime hands over as --pid),
// killed and reaped in the destructor.
struct NetnsProcess {
  pid_t pid = -1;
  NetnsProcess() {
    pid = fork();
    if (pid == 0) {
      execlp("unshare", "unshare", "--net", "sleep", "60", nullptr);
      _exit(127);
    }
  }
  ~NetnsProcess() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

TEST(MoveRestore, TargetByPidAndRestoreAfterTheProcessDied) {
  HostTopology t(2);
  ScopedDir dir;
  const std::string journal = dir.path() + "/j.json";
  const std::string before = dump_state(t.host, t.rail_names());
  NetnsProcess proc;
  // unshare has entered its namespace once /proc/PID/ns/net differs from ours.
  for (int i = 0; i < 100 && sh("[ $(readlink /proc/" + std::to_string(proc.pid) +
                                "/ns/net) != $(readlink /proc/self/ns/net) ]")
                                     .status != 0;
       ++i)
    usleep(20000);
  must(t.host.exec() + gdrproxy() + " netns move --pid " + std::to_string(proc.pid) +
       " --ifaces rdma0,rdma1 --journal " + journal);
  std::string inside =
      must("nsenter --net=/proc/" + std::to_string(proc.pid) + "/ns/net ip addr show rdma1");
  EXPECT_NE(inside.find("192.0.2.11/24"), std::string::npos) << inside;
  // Bring the rails back while the process lives (restore finds them in its namespace).
  must(restore_cmd(t, journal));
  EXPECT_EQ(settle_to(t.host, t.rail_names(), before), before);
}

TEST(Profiles, ShippedProfilesLoadAndStrictWithoutSourceRoutingIsRefused) {
  EXPECT_TRUE(load_profile("multirail", "").source_routing);
  EXPECT_EQ(load_profile("loose", "").sysctls.at("rp_filter"), 2);
  EXPECT_TRUE(load_profile("none", "").sysctls.empty());
  json strict = {{"name", "strict"}, {"sysctls", {{"rp_filter", 1}}}, {"source_routing", nullptr}};
  EXPECT_THROW(profile_from_json(strict, "test"), Error);
  json typo = {{"name", "typo"}, {"sysctls", {{"arp_ignor", 1}}}};
  EXPECT_THROW(profile_from_json(typo, "test"), Error);
  EXPECT_THROW(load_profile("no-such-profile", ""), Error);
}

TEST(Profiles, BuiltInUnlessASearchedDirectoryHasOneOfTheName) {
  // The shipped profiles are built in as configs/netns has them: no directory of the build
  // machine is searched for them.
  for (const char* name : {"multirail", "loose", "none"}) {
    std::ifstream in(std::string(GDRPROXY_SOURCE_DIR) + "/configs/netns/" + name + ".json");
    EXPECT_EQ(load_profile(name, "").raw, json::parse(in)) << name;
  }
  // A file of the same name in --profile-dir comes first.
  ScopedDir dir;
  std::ofstream(dir.path() + "/multirail.json")
      << R"({"name": "multirail", "sysctls": {"arp_ignore": 1}, "source_routing": null})";
  const ArpProfile mine = load_profile("multirail", dir.path());
  EXPECT_FALSE(mine.source_routing);
  EXPECT_EQ(mine.sysctls.size(), 1u);
}

class BadInput : public ::testing::Test {
 protected:
  HostTopology t{2};
  ScopedNetns c{"gnc"};
  ScopedDir dir;
  std::string journal = dir.path() + "/j.json";
  std::vector<std::string> ifaces{"rdma0", "rdma1", "eth0"};
  std::string before = dump_state(t.host, ifaces);

  void expect_untouched() { EXPECT_EQ(settle_to(t.host, ifaces, before), before); }
};

TEST_F(BadInput, UnknownInterface) {
  CmdResult r = sh(t.host.exec() + gdrproxy() + " netns move --netns " + c.path() +
                   " --ifaces rdma0,rdma9 --journal " + journal);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("rdma9: no such interface"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(journal));
  expect_untouched();
}

TEST_F(BadInput, InterfaceAlreadyInTheTarget) {
  must(t.host.ip() + "link set rdma1 netns " + c.name());
  std::string now = dump_state(t.host, ifaces);
  CmdResult r = sh(move_cmd(t, c, journal));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("rdma1: already in the target network namespace"), std::string::npos)
      << r.out;
  EXPECT_EQ(dump_state(t.host, ifaces), now);
}

TEST_F(BadInput, TargetNamespaceGone) {
  std::string path = c.path();
  c.destroy();
  CmdResult r = sh(move_cmd(t, c, journal));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("cannot open network namespace " + path), std::string::npos) << r.out;
  expect_untouched();
}

TEST_F(BadInput, DefaultRouteInterfaceRefusedUnlessAllowed) {
  CmdResult r = sh(t.host.exec() + gdrproxy() + " netns move --netns " + c.path() +
                   " --ifaces rdma0,eth0 --journal " + journal);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("eth0: refusing to move it: it carries the default route"),
            std::string::npos)
      << r.out;
  r = sh(t.host.exec() + gdrproxy() + " netns move --netns " + c.path() +
         " --ifaces rdma1 --bootstrap-addr 192.0.2.11 --journal " + journal);
  EXPECT_NE(r.out.find("rdma1: refusing to move it: it carries the bootstrap address 192.0.2.11"),
            std::string::npos)
      << r.out;
  expect_untouched();
}

TEST_F(BadInput, FailureAfterJournalRollsBack) {
  // A clash found only late: the container already uses routing table 1001, which the
  // multirail profile wants for rdma1. By then both rails are moved and configured.
  must(c.ip() + "route add 192.0.2.0/24 dev lo table 1001");
  CmdResult r = sh(move_cmd(t, c, journal));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("rdma1: cannot add route"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rolled back"), std::string::npos) << r.out;
  EXPECT_NE(sh(c.ip() + "route show table 1001").out.find("dev lo"), std::string::npos)
      << "the container's own route must survive the rollback";
  EXPECT_FALSE(std::filesystem::exists(journal));
  expect_untouched();
}

TEST_F(BadInput, CorruptJournalAndJournalFromAnotherHost) {
  must(move_cmd(t, c, journal));
  std::string text;
  {
    std::ifstream in(journal);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  // One byte changed: the checksum catches it and nothing is touched.
  std::string damaged = text;
  damaged[damaged.find("4200")] = '9';
  { std::ofstream(dir.path() + "/bad.json") << damaged; }
  std::string moved = dump_state(t.host, ifaces);
  CmdResult r = sh(restore_cmd(t, dir.path() + "/bad.json"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("is corrupt: checksum mismatch"), std::string::npos) << r.out;
  { std::ofstream(dir.path() + "/trunc.json") << text.substr(0, text.size() / 2); }
  r = sh(restore_cmd(t, dir.path() + "/trunc.json"));
  EXPECT_NE(r.out.find("is corrupt (not JSON)"), std::string::npos) << r.out;
  // A well-formed journal of another machine.
  json other = json::parse(text);
  other["host"]["hostname"] = "elsewhere";
  other["host"]["machine_id"] = "0123456789abcdef0123456789abcdef";
  other["checksum"] = journal_checksum(other);
  { std::ofstream(dir.path() + "/other.json") << other.dump(); }
  r = sh(restore_cmd(t, dir.path() + "/other.json"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("was written on another host (elsewhere"), std::string::npos) << r.out;
  EXPECT_EQ(dump_state(t.host, ifaces), moved);
  // A second move with the journal still there is refused: it would lose the original.
  r = sh(move_cmd(t, c, journal));
  EXPECT_NE(r.out.find("already exists: an earlier move was not restored"), std::string::npos)
      << r.out;
  must(restore_cmd(t, journal));
  expect_untouched();
}

TEST_F(BadInput, FormatOneJournalIsRefusedNotMatchedByNameOrMac) {
  // A journal of the format before rails had an identity: names and MACs only, which a tenant can
  // copy. Restore refuses it whole and touches nothing, rather than match by them.
  must(move_cmd(t, c, journal));
  json old;
  {
    std::ifstream in(journal);
    old = json::parse(in);
  }
  old["format"] = kJournalFormatWithoutIdentity;
  for (auto& rec : old["ifaces"]) rec.erase("identity");
  old["checksum"] = journal_checksum(old);
  { std::ofstream(dir.path() + "/v1.json") << old.dump(); }
  std::string moved = dump_state(t.host, ifaces);
  CmdResult r = sh(restore_cmd(t, dir.path() + "/v1.json"));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("is a gdrproxy-netns-journal/1 journal: it records the interfaces' names "
                       "and MACs only"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(dump_state(t.host, ifaces), moved);
  EXPECT_EQ(sh(c.ip() + "link show rdma0").status, 0) << "rdma0 must stay where it is";
  must(restore_cmd(t, journal));
  expect_untouched();
}

TEST(MoveRestore, IfindexTakenInTheTargetRailRenumberedAndFoundByItsPeer) {
  // dev_change_net_namespace keeps a link's ifindex unless the destination has that number
  // taken; then it picks another. The rail (a veth) is then known by its peer, outside.
  HostTopology t(2);
  ScopedNetns c("gnc");
  ScopedDir dir;
  const std::string journal = dir.path() + "/j.json";
  const std::string before = dump_state(t.host, t.rail_names());
  auto ifindex_of = [](const ScopedNetns& ns, const std::string& dev) {
    return json::parse(sh(ns.ip() + "-j link show " + dev).out).at(0).at("ifindex").get<int>();
  };
  const int rdma0 = ifindex_of(t.host, "rdma0");
  must(c.ip() + "link add name taken index " + std::to_string(rdma0) +
       " type veth peer name taken1 index " + std::to_string(rdma0 + 100));
  must(move_cmd(t, c, journal));
  EXPECT_NE(ifindex_of(c, "rdma0"), rdma0) << "the kernel kept a taken ifindex";
  CmdResult r = sh(restore_cmd(t, journal));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("rdma0: found as ifindex"), std::string::npos) << r.out;
  EXPECT_EQ(settle_to(t.host, t.rail_names(), before), before);
  EXPECT_EQ(sh(c.ip() + "link show taken").status, 0) << "the target's own link must stay";
}

}  // namespace
}  // namespace gdrproxy::netns::test
