// Image checks on rootfs trees assembled from small ELF libraries compiled here.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "doctor/image.h"
#include "doctor/image_versions.h"
#include "doctor/ld_resolve.h"
#include "doctor/reference_versions.h"
#include "tests/doctor/fixture.h"

namespace gdrproxy::doctor {
namespace {
using testing::build_so;
using testing::only_check;
using testing::TempTree;
using testing::tree_context;

Report run(const TempTree& t) {
  Context c = tree_context(t);
  c.rootfs = t.path("rootfs");
  Report r;
  check_image(c, r);
  return r;
}

const char* const kPlugin = "image.libplugin_LIBFABRIC.so";

// NIXL's libfabric plugin built with RUNPATH /opt/libfabric/lib; libfabric installed at
// `installed_dir` (and found through ld.so.conf.d when that is not the RUNPATH).
void libfabric_image(const TempTree& t, const std::string& installed_dir) {
  const std::string r = t.path("rootfs");
  build_so(r + installed_dir + "/libfabric.so.1.18.0", "libfabric.so.1");
  t.symlink("libfabric.so.1.18.0", "rootfs" + installed_dir + "/libfabric.so.1");
  build_so(r + "/opt/nvidia/nvda_nixl/lib/x86_64-linux-gnu/plugins/libplugin_LIBFABRIC.so", "",
           {r + installed_dir + "/libfabric.so.1.18.0"}, {"/opt/libfabric/lib"});
  t.write("rootfs/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
  t.write("rootfs/etc/ld.so.conf.d/efa.conf", "# EFA\n" + installed_dir + "\n");
}

// The reference image's record of its versions, written from the built-in reference (NCCL,
// which the reference takes from its base image, as `nccl`).
std::string reference_version(const std::string& key) {
  auto j = nlohmann::json::parse(kReferenceVersionsJson)["components"][key];
  return j["version"].is_string() ? j["version"].get<std::string>() : "";
}
void reference_record(const TempTree& t, const std::string& nccl = "2.23.4") {
  t.write("rootfs/etc/gdrproxy-workload/versions",
          "UCX_VERSION=v" + reference_version("ucx") + "\nUCX_SONAME_SUFFIX=\nLIBFABRIC_VERSION=v" +
              reference_version("libfabric") + "\nNIXL_VERSION=v" + reference_version("nixl") +
              "\nNCCL_VERSION=" + nccl + "\n");
}

TEST(Image, LibfabricUnderThePrefixNixlWasBuiltWithPasses) {
  TempTree t;
  libfabric_image(t, "/opt/libfabric/lib");
  reference_record(t);
  Report r = run(t);
  Check k = only_check(r, std::string(kPlugin) + ".needed");
  EXPECT_EQ(k.status, Status::Pass) << r.to_text();
  EXPECT_NE(k.found.find("libfabric.so.1 -> /opt/libfabric/lib/libfabric.so.1.18.0 (RUNPATH)"),
            std::string::npos)
      << k.found;
  EXPECT_TRUE(r.matching(std::string(kPlugin) + ".prefix").empty()) << r.to_text();
  EXPECT_EQ(r.exit_code(), 0) << r.to_text();
}

TEST(ImageVersions, TheReferenceImagesRecordPasses) {
  TempTree t;
  libfabric_image(t, "/opt/libfabric/lib");
  reference_record(t);
  Report r = run(t);
  for (const char* key : {"ucx", "libfabric", "nixl", "nccl"}) {
    Check k = only_check(r, std::string("image.version.") + key);
    EXPECT_EQ(k.status, Status::Pass) << r.to_text();
    EXPECT_NE(k.found.find("/etc/gdrproxy-workload/versions"), std::string::npos) << k.found;
  }
  EXPECT_EQ(r.facts()["image_versions"]["nccl"], "2.23.4");
}

TEST(ImageVersions, OlderAndNewerThanTheReferenceWarnWithWhy) {
  TempTree t;
  libfabric_image(t, "/opt/libfabric/lib");
  ASSERT_GE(compare_versions(version_numbers(reference_version("ucx")), {1, 21}), 0);
  t.write("rootfs/etc/gdrproxy-workload/versions",
          "UCX_VERSION=v1.20.0\nLIBFABRIC_VERSION=v99.0.0\nNIXL_VERSION=v" +
              reference_version("nixl") + "\nNCCL_VERSION=2.19.3\n");
  Report r = run(t);
  Check k = only_check(r, "image.version.ucx");
  EXPECT_EQ(k.status, Status::Warn) << k.found;
  EXPECT_NE(k.found.find("older than the reference image's " + reference_version("ucx")),
            std::string::npos)
      << k.found;
  EXPECT_NE(k.found.find("below 1.21: no pid namespace in cuda_ipc rkeys"), std::string::npos)
      << k.found;
  k = only_check(r, "image.version.libfabric");
  EXPECT_EQ(k.status, Status::Warn) << k.found;
  EXPECT_NE(k.found.find("is newer than the reference image's"), std::string::npos) << k.found;
  k = only_check(r, "image.version.nccl");
  EXPECT_EQ(k.status, Status::Warn) << k.found;
  EXPECT_NE(k.found.find("below 2.21.5: NCCL_IB_GID_INDEX"), std::string::npos) << k.found;
  EXPECT_EQ(only_check(r, "image.version.nixl").status, Status::Pass);
}

// No record: pkg-config files, NCCL's real file name and nccl.h, as an image holds them.
TEST(ImageVersions, FoundInPkgConfigFilesAndNcclsFileName) {
  TempTree t;
  libfabric_image(t, "/opt/libfabric/lib");
  t.write("rootfs/usr/lib/pkgconfig/ucx.pc",
          "prefix=/usr\nName: ucx\nVersion: " + reference_version("ucx") + "\n");
  t.write("rootfs/opt/libfabric/lib/pkgconfig/libfabric.pc",
          "Name: libfabric\nVersion: " + reference_version("libfabric") + "\n");
  build_so(t.path("rootfs/usr/lib/x86_64-linux-gnu/libnccl.so.2.19.3"), "libnccl.so.2");
  t.symlink("libnccl.so.2.19.3", "rootfs/usr/lib/x86_64-linux-gnu/libnccl.so.2");
  Report r = run(t);
  EXPECT_EQ(only_check(r, "image.version.ucx").status, Status::Pass) << r.to_text();
  Check k = only_check(r, "image.version.libfabric");
  EXPECT_EQ(k.status, Status::Pass) << k.found;
  EXPECT_NE(k.found.find("/opt/libfabric/lib/pkgconfig/libfabric.pc"), std::string::npos)
      << k.found;
  k = only_check(r, "image.version.nccl");
  EXPECT_EQ(k.status, Status::Warn) << k.found;
  EXPECT_NE(k.found.find("\"2.19.3\" (/usr/lib/x86_64-linux-gnu/libnccl.so.2.19.3)"),
            std::string::npos)
      << k.found;
  // NIXL left no trace: a warning that says so, never a pass.
  k = only_check(r, "image.version.nixl");
  EXPECT_EQ(k.status, Status::Warn) << k.found;
  EXPECT_NE(k.found.find("cannot tell the image's NIXL version"), std::string::npos) << k.found;

  // A newer NCCL's header is read when its library is not there under a release name.
  TempTree h;
  h.write("rootfs/usr/include/nccl.h",
          "#define NCCL_MAJOR 2\n#define NCCL_MINOR 27\n#define NCCL_PATCH 5\n");
  k = only_check(run(h), "image.version.nccl");
  EXPECT_EQ(k.status, Status::Pass) << k.found;
  EXPECT_NE(k.found.find("2.27.5"), std::string::npos) << k.found;
}

TEST(ImageVersions, LibtoolNumbersAreNotVersionsAndTwoCopiesCannotTell) {
  TempTree t;
  t.mkdir("rootfs/usr");
  // libfabric.so.1.24.0 is libtool's interface number: no libfabric version from it.
  build_so(t.path("rootfs/usr/lib/libfabric.so.1.24.0"), "libfabric.so.1");
  t.write("rootfs/usr/lib/pkgconfig/ucx.pc", "Version: 1.22.0\n");
  t.write("rootfs/opt/hpcx/ucx/lib/pkgconfig/ucx.pc", "Version: 1.19.0\n");
  Report r = run(t);
  EXPECT_EQ(only_check(r, "image.version.libfabric").status, Status::Warn);
  Check k = only_check(r, "image.version.ucx");
  EXPECT_EQ(k.status, Status::Warn) << k.found;
  EXPECT_NE(k.found.find("several UCX versions"), std::string::npos) << k.found;
  EXPECT_NE(k.found.find("/opt/hpcx/ucx/lib/pkgconfig/ucx.pc"), std::string::npos) << k.found;
}

TEST(ImageVersions, VersionNumbers) {
  EXPECT_EQ(version_numbers("v1.22.0"), (std::vector<int>{1, 22, 0}));
  EXPECT_EQ(version_numbers("2.23.4-1+cuda12.4"), (std::vector<int>{2, 23, 4}));
  EXPECT_TRUE(version_numbers("master").empty());
  EXPECT_EQ(compare_versions({1, 22}, {1, 22, 0}), 0);
  EXPECT_LT(compare_versions({1, 9, 9}, {1, 21}), 0);
}

TEST(Image, LibfabricUnderAnotherPrefixFails) {
  TempTree t;
  libfabric_image(t, "/opt/amazon/efa/lib");
  Report r = run(t);
  Check k = only_check(r, std::string(kPlugin) + ".prefix");
  EXPECT_EQ(k.status, Status::Fail);
  EXPECT_NE(k.found.find("built against /opt/libfabric/lib but libfabric.so.1 resolves to "
                         "/opt/amazon/efa/lib/libfabric.so.1.18.0 (ld.so.conf)"),
            std::string::npos)
      << k.found;
}

TEST(Image, UnresolvedNeededFailsButInjectedDriverLibraryDoesNot) {
  TempTree t;
  const std::string r = t.path("rootfs");
  TempTree scratch;
  build_so(scratch.path("libucp.so.0"), "libucp.so.0");
  build_so(scratch.path("libcuda.so.1"), "libcuda.so.1");
  build_so(r + "/usr/lib/nixl/plugins/libplugin_UCX.so", "",
           {scratch.path("libucp.so.0"), scratch.path("libcuda.so.1")});
  Check k = only_check(run(t), "image.libplugin_UCX.so.needed");
  EXPECT_EQ(k.status, Status::Fail);
  EXPECT_NE(k.found.find("libucp.so.0"), std::string::npos) << k.found;
  EXPECT_EQ(k.found.find("libcuda"), std::string::npos) << k.found;
  build_so(r + "/usr/lib/x86_64-linux-gnu/libucp.so.0", "libucp.so.0");
  EXPECT_EQ(only_check(run(t), "image.libplugin_UCX.so.needed").status, Status::Pass);
}

TEST(Image, UcxFromTwoDirectoriesFails) {
  TempTree t;
  const std::string r = t.path("rootfs");
  // UCX built into /usr/local/ucx, but the base image's libucs still in the default directory,
  // and libucp from /usr/local/ucx has no RUNPATH: its libucs comes from the default directory.
  build_so(r + "/usr/lib/x86_64-linux-gnu/libucs.so.0", "libucs.so.0");
  build_so(r + "/usr/local/ucx/lib/libucs.so.0", "libucs.so.0");
  build_so(r + "/usr/local/ucx/lib/libucp.so.0", "libucp.so.0",
           {r + "/usr/local/ucx/lib/libucs.so.0"});
  build_so(r + "/usr/local/nixl/plugins/libplugin_UCX.so", "",
           {r + "/usr/local/ucx/lib/libucp.so.0", r + "/usr/local/ucx/lib/libucs.so.0"},
           {"/usr/local/ucx/lib"});
  Report rep = run(t);
  Check k = only_check(rep, "image.libplugin_UCX.so.ucx_mixed");
  EXPECT_EQ(k.status, Status::Fail);
  EXPECT_NE(k.found.find("/usr/lib/x86_64-linux-gnu"), std::string::npos) << k.found;
  // Giving libucp the RUNPATH it should have had makes the closure consistent.
  build_so(r + "/usr/local/ucx/lib/libucp.so.0", "libucp.so.0",
           {r + "/usr/local/ucx/lib/libucs.so.0"}, {"$ORIGIN"});
  EXPECT_TRUE(run(t).matching("image.libplugin_UCX.so.ucx_mixed").empty());
}

TEST(Image, NoPluginWarnsAndBadPluginFails) {
  TempTree t;
  t.mkdir("rootfs/usr/lib");
  EXPECT_EQ(only_check(run(t), "image.nixl").status, Status::Warn);
  t.write("rootfs/usr/lib/plugins/libplugin_POSIX.so",
          "\x7f"
          "ELF garbage");
  EXPECT_EQ(only_check(run(t), "image.libplugin_POSIX.so.elf").status, Status::Fail);
}

// "/" as the rootfs (the doctor run inside the image itself): walked like any other root. The
// check runs in a child chroot()ed into a tree holding one plugin, which must be found.
TEST(Image, SlashAsTheRootIsWalked) {
  TempTree t;
  build_so(t.path("rootfs/usr/lib/libplugin_UCX.so"), "");
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::chroot(t.path("rootfs").c_str()) != 0 || ::chdir("/") != 0) ::_exit(3);
    Context c;
    c.rootfs = "/";
    Report r;
    check_image(c, r);
    for (const auto& k : r.checks())
      if (k.id == "image.libplugin_UCX.so.needed") ::_exit(k.status == Status::Pass ? 0 : 4);
    ::_exit(5);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: chroot failed, 4: not a pass, 5: plugin not found";
}

TEST(Rootfs, SymlinksStayInsideTheImage) {
  TempTree t;
  t.write("rootfs/usr/lib/real.so", "x");
  t.symlink("/usr/lib/real.so", "rootfs/lib/abs.so");
  t.symlink("../../../../../../usr/lib/real.so", "rootfs/lib/up.so");
  t.symlink("/etc/passwd", "rootfs/lib/escape");
  t.symlink("loop2", "rootfs/lib/loop1");
  t.symlink("loop1", "rootfs/lib/loop2");
  Rootfs fs(t.path("rootfs"));
  EXPECT_EQ(fs.resolve("/lib/abs.so"), "/usr/lib/real.so");
  EXPECT_EQ(fs.resolve("/lib/up.so"), "/usr/lib/real.so");
  EXPECT_FALSE(fs.resolve("/lib/escape"));  // the image has no /etc/passwd
  EXPECT_FALSE(fs.resolve("/lib/loop1"));
  t.write("rootfs/etc/ld.so.conf", "/a\ninclude conf.d/*.conf # c\n/z\n");
  t.write("rootfs/etc/conf.d/1.conf", "/b\n");
  t.write("rootfs/etc/conf.d/2.conf", "/c\ninclude /etc/conf.d/*.conf\n");
  auto dirs = fs.ld_so_conf_dirs();
  ASSERT_GE(dirs.size(), 4u);
  EXPECT_EQ(dirs[0], "/a");
  EXPECT_EQ(dirs[1], "/b");
  EXPECT_EQ(dirs[2], "/c");
  EXPECT_EQ(dirs.back(), "/z");
}

}  // namespace
}  // namespace gdrproxy::doctor
