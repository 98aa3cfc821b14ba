// Attributes the host refuses to read: capture records the errno, the snapshot's JSON keeps it,
// and a tenant reading the built tree with its plan applied gets that same errno from read(),
// never ENOENT or an empty file. The refusals are real: kernel files of a fresh network
// namespace's down loopback (speed: EINVAL; a queue's traffic_class: ENOENT from read(), though
// open() succeeds) bound over a fixture host's files, in a private mount namespace.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <gtest/gtest.h>

#include "base/file_io.h"
#include "sysfs/builder.h"
#include "sysfs/capture.h"
#include "sysfs/mount_plan.h"
#include "sysfs/selection.h"
#include "sysfs/snapshot.h"
#include "tests/sysfs/test_util.h"

namespace gdrproxy::sysfs {
namespace {

const char* const kFn =
    "host/sys/devices/pci0000:07/0000:07:01.0/0000:08:00.0/0000:09:00.0/0000:0a:00.0/0000:0b:00.0/"
    "0000:0c:00.1";

// What a tenant sees reading `path`: "data:<bytes>", "open:<errno>" or "read:<errno>".
std::string outcome(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::string("open:") + errno_name(errno);
  char buf[256];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  const int e = errno;
  ::close(fd);
  if (n < 0) return std::string("read:") + errno_name(e);
  return "data:" + std::string(buf, static_cast<size_t>(n));
}

TEST(Refused, SnapshotJsonRoundTripsAndOldSnapshotsLoad) {
  Snapshot s = test::example_snapshot();  // written before `refused` existed
  ASSERT_FALSE(s.net.empty());
  ASSERT_FALSE(s.ib.empty());
  for (const auto& n : s.net) EXPECT_TRUE(n.refused.empty());
  NetDevice& n = s.net.front();
  n.attrs.erase("speed");
  n.refused["speed"] = EINVAL;
  IbPort& p = s.ib.front().ports.front();
  p.attrs.erase("rate");
  p.refused["rate"] = EINVAL;
  const int empty_slot = p.gid_table_len - 1;
  ASSERT_FALSE(p.gid_types.count(empty_slot));
  p.gid_types_refused[empty_slot] = ENODATA;
  s.pci.front().refused["current_link_speed"] = EIO;
  s.pci.front().attrs.erase("current_link_speed");
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j["net"][0]["refused"]["speed"], "EINVAL");
  EXPECT_EQ(j["infiniband"][0]["ports"][0]["gid_types_refused"][std::to_string(empty_slot)],
            "ENODATA");
  EXPECT_FALSE(j["net"][1].contains("refused")) << "written only where something was refused";
  const Snapshot back = snapshot_from_json(j);
  EXPECT_EQ(back.net.front().refused, n.refused);
  EXPECT_EQ(back.ib.front().ports.front().refused, p.refused);
  EXPECT_EQ(back.ib.front().ports.front().gid_types_refused, p.gid_types_refused);
  EXPECT_EQ(back.pci.front().refused.at("current_link_speed"), EIO);

  // A name that is no errno, and an attribute both read and refused, are refused by name.
  nlohmann::json bad = j;
  bad["net"][0]["refused"]["speed"] = "EWHATEVER";
  EXPECT_THROW(snapshot_from_json(bad), Error);
  bad = j;
  bad["net"][0]["attrs"]["speed"] = "100000\n";
  try {
    snapshot_from_json(bad);
    FAIL() << "a value and a refusal for one attribute were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("refused.speed: also has a value"), std::string::npos)
        << e.what();
  }
}

// Every step runs in a child with private mount and network namespaces; a failed step writes its
// reason to `why` and exits with its number.
class Child {
 public:
  explicit Child(std::string why) : why_(std::move(why)) {}
  void check(bool ok, int step, const std::string& what) const {
    if (ok) return;
    std::ofstream(why_) << what << "\n";
    _exit(step);
  }

 private:
  std::string why_;
};

TEST(Refused, TenantReadFailsWithTheHostsErrno) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for mount and network namespaces";
  test::TempDir t;
  ASSERT_TRUE(test::prepare_fixture("hgx-roce16", t / "host"));
  const std::string fn = t / kFn;
  const std::string net = fn + "/net/rdma1", ib = fn + "/infiniband/mlx5_1";
  const std::string port = ib + "/ports/1";
  const std::string tree = t / "tree", why = t / "why";
  ASSERT_EQ(::mkdir((t / "ksys").c_str(), 0755), 0);

  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Child c(why);
    c.check(::unshare(CLONE_NEWNS | CLONE_NEWNET) == 0, 10, "unshare");
    c.check(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0, 11, "private /");
    // A sysfs of this fresh network namespace: its loopback is down.
    c.check(::mount("sysfs", (t / "ksys").c_str(), "sysfs", 0, nullptr) == 0, 12, "mount sysfs");
    const std::string lo = t / "ksys/class/net/lo";
    const std::string einval = lo + "/speed", enoent = lo + "/queues/tx-0/traffic_class";
    c.check(outcome(einval) == "read:EINVAL", 13, "down lo speed: " + outcome(einval));
    c.check(outcome(enoent) == "read:ENOENT", 14, "lo traffic_class: " + outcome(enoent));
    // The fixture host's attributes become the kernel's refusing files.
    const std::pair<std::string, std::string> over[] = {
        {einval, net + "/speed"},
        {enoent, net + "/carrier"},
        {einval, fn + "/current_link_width"},
        {enoent, ib + "/fw_ver"},
        {einval, port + "/rate"},
        {einval, port + "/gid_attrs/types/200"},
    };
    for (const auto& [src, dst] : over)
      c.check(::mount(src.c_str(), dst.c_str(), nullptr, MS_BIND, nullptr) == 0, 15, "bind " + dst);

    // Capture records each refusal with its errno, never as absent.
    const Snapshot captured = capture(t / "host");
    const Snapshot s = snapshot_from_json(to_json(captured));
    const NetDevice* rdma1 = s.find_net("rdma1");
    const IbDevice* mlx5_1 = s.find_ib("mlx5_1");
    c.check(rdma1 && mlx5_1 && s.find_pci("0000:0c:00.1"), 20, "devices missing from capture");
    c.check(rdma1->refused == RefusedMap{{"carrier", ENOENT}, {"speed", EINVAL}}, 21,
            "net refused");
    c.check(!rdma1->attrs.count("speed") && rdma1->attrs.count("mtu"), 22, "net attrs");
    c.check(s.find_pci("0000:0c:00.1")->refused == RefusedMap{{"current_link_width", EINVAL}}, 23,
            "pci refused");
    c.check(mlx5_1->refused == RefusedMap{{"fw_ver", ENOENT}}, 24, "ib refused");
    const IbPort& p = mlx5_1->ports.front();
    c.check(p.refused == RefusedMap{{"rate", EINVAL}}, 25, "port refused");
    c.check(p.gid_types_refused == std::map<int, int>{{200, EINVAL}}, 26, "gid type refused");
    c.check(std::none_of(s.omissions.begin(), s.omissions.end(),
                         [](const std::string& o) { return o.find("rdma1") != std::string::npos; }),
            27, "a refusal was logged as an omission");

    // The tree has a placeholder; the plan binds the host's file over it.
    SelectionRequest r;
    r.gpus_given = r.nics_given = true;
    r.nics = {"mlx5_1"};
    const Selection sel = select(s, r);
    const BuildResult built = build_tree(s, sel, {tree, false, true});
    c.check(built.refused == 4, 30, "placeholders: " + std::to_string(built.refused));
    const std::string tnet = tree + "/class/net/rdma1";
    c.check(outcome(tnet + "/speed") == "data:", 31, "unmounted placeholder");
    const MountPlan plan = mount_plan_from_json(to_json(make_mount_plan(s, sel, tree, t / "host")));
    const auto files = std::count_if(plan.binds.begin(), plan.binds.end(),
                                     [](const BindMount& b) { return b.file; });
    c.check(files == 4, 32, "file binds: " + std::to_string(files));
    for (const BindMount& b : plan.binds)
      if (b.target.find("/net/rdma1/") != std::string::npos)
        c.check(b.file && b.optional, 33, "a netdev's bind is optional: " + b.target);
    c.check(apply_mount_plan(plan).empty(), 34, "apply");

    // The tenant's reads: open() succeeds, read() fails with the host's errno.
    const std::pair<std::string, std::string> want[] = {
        {tnet + "/speed", "read:EINVAL"},
        {tnet + "/carrier", "read:ENOENT"},
        {tree + "/bus/pci/devices/0000:0c:00.1/current_link_width", "read:EINVAL"},
        {tree + "/class/infiniband/mlx5_1/fw_ver", "read:ENOENT"},
        {tnet + "/mtu", "data:" + read_text(net + "/mtu").value_or("?")},
    };
    for (const auto& [path, expect] : want)
      c.check(outcome(path) == expect, 40, path + ": " + outcome(path) + ", want " + expect);
    // Read-only like the rest of the tree.
    c.check(::open((tnet + "/speed").c_str(), O_WRONLY) < 0 && errno == EROFS, 41, "writable");
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "child step " << WEXITSTATUS(status) << " failed: " << read_text(why).value_or("");
}

// A NIC without one of the refused files at plan time (its interface moved to another network
// namespace) keeps the placeholder instead of failing the plan or its application.
TEST(Refused, MissingNetdevSourceIsSkipped) {
  test::TempDir t;
  ASSERT_TRUE(test::prepare_fixture("hgx-roce16", t / "host"));
  Snapshot s = capture(t / "host");
  NetDevice& n = const_cast<NetDevice&>(*s.find_net("rdma1"));
  n.attrs.erase("speed");
  n.refused["speed"] = EINVAL;
  n.refused["duplex"] = EINVAL;  // the host tree has no such file
  SelectionRequest r;
  r.gpus_given = r.nics_given = true;
  r.nics = {"mlx5_1"};
  const Selection sel = select(s, r);
  build_tree(s, sel, {t / "tree", false, true});
  const MountPlan p = make_mount_plan(s, sel, t / "tree", t / "host");
  const auto speed = std::find_if(p.binds.begin(), p.binds.end(), [](const BindMount& b) {
    return b.target.size() > 6 && b.target.compare(b.target.size() - 6, 6, "/speed") == 0;
  });
  ASSERT_NE(speed, p.binds.end());
  EXPECT_EQ(speed->source, t / kFn + std::string("/net/rdma1/speed"));
  EXPECT_TRUE(std::none_of(p.binds.begin(), p.binds.end(), [](const BindMount& b) {
    return b.target.find("duplex") != std::string::npos;
  }));
  EXPECT_TRUE(std::any_of(p.notes.begin(), p.notes.end(), [](const std::string& note) {
    return note.find("/net/rdma1/duplex is missing") != std::string::npos;
  }));
}

}  // namespace
}  // namespace gdrproxy::sysfs
