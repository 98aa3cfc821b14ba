// Library binding: /proc/PID/maps of fake processes and of this test process itself.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>

#include "doctor/libraries.h"
#include "doctor/probe.h"
#include "tests/doctor/fixture.h"

namespace gdrproxy::doctor {
namespace {
using testing::build_so;
using testing::only_check;
using testing::TempTree;
using testing::tree_context;

Report run(const Context& c) {
  Report r;
  check_libraries(c, r);
  return r;
}

std::string map_line(const std::string& inode, const std::string& path) {
  return "7f0000000000-7f0000001000 r-xp 00000000 fd:01 " + inode + "                 " + path +
         "\n";
}

TEST(Maps, ParsesPathsWithSpacesDeletedAndSkipsAnonymous) {
  const std::string text = map_line("11", "/usr/lib/libucp.so.0.0.0") +
                           map_line("11", "/usr/lib/libucp.so.0.0.0") +
                           "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n" +
                           map_line("0", "[vdso]") + map_line("12", "/opt/my dir/libfabric.so.1") +
                           map_line("13", "/tmp/libnccl.so.2.21.5 (deleted)");
  auto m = parse_maps(text);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].path, "/usr/lib/libucp.so.0.0.0");
  EXPECT_EQ(m[1].path, "/opt/my dir/libfabric.so.1");
  EXPECT_EQ(m[2].path, "/tmp/libnccl.so.2.21.5");
  EXPECT_TRUE(m[2].deleted);
}

TEST(Maps, ClassifiesTrackedLibraries) {
  auto k = classify_library("/opt/nixl/lib/libucp-nixl.so.0.0.0");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->family, "libucp");
  EXPECT_EQ(k->suffix, "nixl");
  EXPECT_EQ(classify_library("/usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so")->family,
            "verbs provider");
  EXPECT_EQ(classify_library("/usr/lib/ucx/libuct_ib.so.0")->family, "UCX module");
  EXPECT_EQ(classify_library("/usr/lib/libnccl-net.so")->family, "NCCL net plugin");
  EXPECT_EQ(classify_library("/opt/nixl/plugins/libplugin_UCX.so")->family, "NIXL plugin");
  EXPECT_FALSE(classify_library("/usr/lib/libc.so.6"));
  EXPECT_FALSE(classify_library("/usr/lib/libucpx.so"));
}

TEST(Libraries, WithoutPidWarnsAndSaysWhy) {
  TempTree t;
  Check k = only_check(run(tree_context(t)), "lib.pid");
  EXPECT_EQ(k.status, Status::Warn);
  EXPECT_NE(k.fix.find("--pid"), std::string::npos);
}

TEST(Libraries, TwoCopiesOfOneSonameFail) {
  TempTree t;
  t.write("proc/4242/maps", map_line("21", "/usr/lib/x86_64-linux-gnu/libucp.so.0.0.0") +
                                map_line("22", "/opt/hpcx/ucx/lib/libucp.so.0.0.0") +
                                map_line("23", "/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14"));
  Context c = tree_context(t);
  c.pids = {4242};
  Report r = run(c);
  Check k = only_check(r, "lib.4242.duplicates");
  EXPECT_EQ(k.status, Status::Fail);
  EXPECT_NE(k.found.find("/opt/hpcx/ucx/lib/libucp.so.0.0.0"), std::string::npos) << k.found;
  EXPECT_NE(only_check(r, "lib.4242.mapped").found.find("libibverbs="), std::string::npos);

  t.write("proc/4242/maps", map_line("21", "/usr/lib/x86_64-linux-gnu/libucp.so.0.0.0") +
                                map_line("23", "/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14"));
  EXPECT_EQ(only_check(run(c), "lib.4242.duplicates").status, Status::Pass);
}

// A private-SONAME UCX beside HPC-X's global one; the NIXL UCX plugin links `plugin_links`.
Report private_ucx(const TempTree& t, const std::string& plugin_links,
                   const std::string& environ = "") {
  const std::string root = t.path("proc/4242/root");
  build_so(root + "/usr/lib/libucp.so.0", "libucp.so.0");
  build_so(root + "/opt/nixl/ucx/lib/libucp-nixl.so.0", "libucp-nixl.so.0");
  build_so(root + "/opt/nixl/plugins/libplugin_UCX.so", "", {root + plugin_links});
  t.write("proc/4242/maps", map_line("31", "/usr/lib/libucp.so.0") +
                                map_line("32", "/opt/nixl/ucx/lib/libucp-nixl.so.0") +
                                map_line("33", "/opt/nixl/plugins/libplugin_UCX.so"));
  t.write("proc/4242/environ", environ);
  Context c = tree_context(t);
  c.pids = {4242};
  return run(c);
}

TEST(Libraries, PrivateUcxBoundByNixlPluginPasses) {
  TempTree t;
  Report r = private_ucx(t, "/opt/nixl/ucx/lib/libucp-nixl.so.0");
  EXPECT_EQ(only_check(r, "lib.4242.duplicates").status, Status::Pass);
  Check k = only_check(r, "lib.4242.ucx_private");
  EXPECT_EQ(k.status, Status::Pass) << k.found;
}

TEST(Libraries, PluginPathIsResolvedInsideTheProcessRoot) {
  TempTree t;
  const std::string root = t.path("proc/4242/root");
  build_so(root + "/usr/lib/libucp.so.0", "libucp.so.0");
  build_so(root + "/opt/nixl/ucx/lib/libucp-nixl.so.0", "libucp-nixl.so.0");
  build_so(root + "/opt/nixl/real/libplugin_UCX.so", "",
           {root + "/opt/nixl/ucx/lib/libucp-nixl.so.0"});
  // An absolute link means the process's /opt, not the host's.
  t.symlink("/opt/nixl/real/libplugin_UCX.so", "proc/4242/root/opt/nixl/plugins/libplugin_UCX.so");
  t.write("proc/4242/maps", map_line("31", "/usr/lib/libucp.so.0") +
                                map_line("32", "/opt/nixl/ucx/lib/libucp-nixl.so.0") +
                                map_line("33", "/opt/nixl/plugins/libplugin_UCX.so"));
  Context c = tree_context(t);
  c.pids = {4242};
  Check k = only_check(run(c), "lib.4242.ucx_private");
  EXPECT_EQ(k.status, Status::Pass) << k.found;
}

TEST(Libraries, PrivateUcxButPluginLinksGlobalFails) {
  TempTree t;
  Check k = only_check(private_ucx(t, "/usr/lib/libucp.so.0"), "lib.4242.ucx_private");
  EXPECT_EQ(k.status, Status::Fail);
  EXPECT_NE(k.found.find("links the global libucp"), std::string::npos) << k.found;
}

TEST(Libraries, NixlExpectedSonameChecked) {
  TempTree t;
  std::string env = std::string("NIXL_UCX_EXPECTED_SONAME=libucp-nixl") + '\0' + "HOME=/root";
  EXPECT_EQ(only_check(private_ucx(t, "/opt/nixl/ucx/lib/libucp-nixl.so.0", env),
                       "lib.4242.nixl_expected_soname")
                .status,
            Status::Pass);
  TempTree t2;
  env = std::string("NIXL_UCX_EXPECTED_SONAME=libucp-other") + '\0';
  EXPECT_EQ(only_check(private_ucx(t2, "/opt/nixl/ucx/lib/libucp-nixl.so.0", env),
                       "lib.4242.nixl_expected_soname")
                .status,
            Status::Fail);
}

TEST(Libraries, PreloadedGlobalUcxWithoutDeepbindWarns) {
  TempTree t;
  const std::string pre = std::string("LD_PRELOAD=/opt/hpcx/ucx/lib/libucp.so.0") + '\0';
  Check k =
      only_check(private_ucx(t, "/opt/nixl/ucx/lib/libucp-nixl.so.0", pre), "lib.4242.ucx_preload");
  EXPECT_EQ(k.status, Status::Warn);
  TempTree t2;
  Report r =
      private_ucx(t2, "/opt/nixl/ucx/lib/libucp-nixl.so.0", pre + "NIXL_UCX_DEEPBIND=1" + '\0');
  EXPECT_TRUE(r.matching("lib.4242.ucx_preload").empty()) << r.to_text();
}

TEST(Libraries, LiveProcessWithTwoCopiesFails) {
  TempTree t;
  build_so(t.path("a/libucs.so.0"), "libucs.so.0");
  build_so(t.path("b/libucs.so.0"), "libucs.so.0");
  Context c = node_context();
  c.pids = {static_cast<int>(::getpid())};
  void* a = ::dlopen(t.path("a/libucs.so.0").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_TRUE(a) << ::dlerror();
  Report one = run(c);
  const std::string id = "lib." + std::to_string(::getpid());
  EXPECT_EQ(only_check(one, id + ".duplicates").status, Status::Pass);
  EXPECT_NE(only_check(one, id + ".mapped").found.find(t.path("a/libucs.so.0")), std::string::npos);
  void* b = ::dlopen(t.path("b/libucs.so.0").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_TRUE(b) << ::dlerror();
  Check k = only_check(run(c), id + ".duplicates");
  EXPECT_EQ(k.status, Status::Fail);
  EXPECT_NE(k.found.find(t.path("b/libucs.so.0")), std::string::npos) << k.found;
  ::dlclose(b);
  ::dlclose(a);
}

TEST(Libraries, UnreadableMapsFails) {
  TempTree t;
  Context c = tree_context(t);
  c.pids = {999999};
  EXPECT_EQ(only_check(run(c), "lib.999999.maps").status, Status::Fail);
}

// The probe: a child of the test dlopen()s libraries compiled here; its real maps are analysed.
Context probe_context(const TempTree& t, const std::vector<std::string>& libraries) {
  Context c = tree_context(t);
  c.probe_libraries = libraries;
  return c;
}

TEST(LibraryProbe, LoadsWhatIsThereAndSaysWhatIsNot) {
  TempTree t;
  build_so(t.path("lib/libibverbs.so.1"), "libibverbs.so.1");
  build_so(t.path("lib/libucp.so.0"), "libucp.so.0");
  Report r = run(probe_context(t, {t.path("lib/libibverbs.so.1"), t.path("lib/libucp.so.0"),
                                   "libdoctor-no-such-library.so.7"}));
  Check k = only_check(r, "lib.probe.dlopen");
  EXPECT_EQ(k.status, Status::Pass) << r.to_text();
  EXPECT_NE(k.found.find("not loadable here: libdoctor-no-such-library.so.7: "), std::string::npos)
      << k.found;
  k = only_check(r, "lib.probe.mapped");
  EXPECT_EQ(k.status, Status::Pass) << r.to_text();
  EXPECT_EQ(k.found.rfind("probe (pid ", 0), 0u) << k.found;
  EXPECT_NE(k.found.find("not a live rank"), std::string::npos) << k.found;
  EXPECT_NE(k.found.find("libibverbs=" + t.path("lib/libibverbs.so.1")), std::string::npos)
      << k.found;
  EXPECT_EQ(only_check(r, "lib.probe.duplicates").status, Status::Pass);
  EXPECT_TRUE(r.matching("lib.probe.time").empty()) << r.to_text();
  EXPECT_TRUE(r.facts()["libraries"]["probe"].contains("libucp"));
}

TEST(LibraryProbe, TwoCopiesInTheProbeFail) {
  TempTree t;
  build_so(t.path("a/libucs.so.0"), "libucs.so.0");
  build_so(t.path("b/libucs.so.0"), "libucs.so.0");
  Report r = run(probe_context(t, {t.path("a/libucs.so.0"), t.path("b/libucs.so.0")}));
  Check k = only_check(r, "lib.probe.duplicates");
  EXPECT_EQ(k.status, Status::Fail) << r.to_text();
  EXPECT_NE(k.found.find(t.path("b/libucs.so.0")), std::string::npos) << k.found;
}

TEST(LibraryProbe, NothingLoadableWarns) {
  TempTree t;
  Report r = run(probe_context(t, {"libdoctor-no-such-library.so.7"}));
  EXPECT_EQ(only_check(r, "lib.probe.dlopen").status, Status::Warn) << r.to_text();
  EXPECT_EQ(only_check(r, "lib.probe.mapped").status, Status::Warn) << r.to_text();
}

// A library whose constructor never returns: the probe is killed at its deadline and reaped.
TEST(LibraryProbe, HangingConstructorIsKilledInTime) {
  TempTree t;
  build_so(t.path("lib/libnccl.so.2"), "libnccl.so.2");
  build_so(t.path("lib/libhang.so.1"), "libhang.so.1", {}, {}, false, false,
           "__attribute__((constructor)) static void spin(void) { for (;;) "
           "__asm__ volatile(\"\"); }\n");
  const auto start = std::chrono::steady_clock::now();
  ProbeResult p = run_probe({t.path("lib/libnccl.so.2"), t.path("lib/libhang.so.1")},
                            std::chrono::milliseconds(300));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::milliseconds(1500));
  EXPECT_TRUE(p.timed_out);
  EXPECT_EQ(p.stuck, t.path("lib/libhang.so.1"));
  EXPECT_NE(p.maps.find(t.path("lib/libnccl.so.2")), std::string::npos);
  ASSERT_GT(p.pid, 0);
  errno = 0;
  EXPECT_EQ(::kill(p.pid, 0), -1);  // killed and reaped: no such process
  EXPECT_EQ(errno, ESRCH);

  Context c = probe_context(t, {t.path("lib/libnccl.so.2"), t.path("lib/libhang.so.1")});
  c.probe_timeout = std::chrono::milliseconds(300);
  Report r = run(c);
  Check k = only_check(r, "lib.probe.time");
  EXPECT_EQ(k.status, Status::Warn) << r.to_text();
  EXPECT_NE(k.found.find("dlopen(" + t.path("lib/libhang.so.1") + ") had not returned"),
            std::string::npos)
      << k.found;
  EXPECT_NE(only_check(r, "lib.probe.mapped").found.find("libnccl="), std::string::npos);
}

// A constructor that kills its process: a failure that names the library.
TEST(LibraryProbe, CrashingConstructorFails) {
  TempTree t;
  build_so(t.path("lib/libcrash.so.1"), "libcrash.so.1", {}, {}, false, false,
           "__attribute__((constructor)) static void crash(void) { "
           "*(volatile int*)0 = 1; }\n");
  Report r = run(probe_context(t, {t.path("lib/libcrash.so.1")}));
  Check k = only_check(r, "lib.probe.time");
  EXPECT_EQ(k.status, Status::Fail) << r.to_text();
  EXPECT_NE(k.found.find("died while loading " + t.path("lib/libcrash.so.1")), std::string::npos)
      << k.found;
}

}  // namespace
}  // namespace gdrproxy::doctor
