// The dma-buf provenance check against a /proc-shaped tree: fd links and fdinfo files exactly as
// the kernel formats them (fdinfo of a dma-buf carries "exp_name:\t<exporter>").
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "proxy/gpudirect/dmabuf_check.h"

namespace gdrproxy::proxy {
namespace {

namespace fs = std::filesystem;

class DmabufCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("gdrproxy-dmabuf-" + std::to_string(::getpid()));
    fs::create_directories(root_ / "77" / "fd");
    fs::create_directories(root_ / "77" / "fdinfo");
  }
  void TearDown() override { fs::remove_all(root_); }
  void add_fd(int fd, const std::string& target, const std::string& exp_name) {
    fs::create_symlink(target, root_ / "77" / "fd" / std::to_string(fd));
    std::ofstream(root_ / "77" / "fdinfo" / std::to_string(fd))
        << "pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\nsize:\t2097152\ncount:\t2\n"
        << (exp_name.empty() ? "" : "exp_name:\t" + exp_name + "\n");
  }
  fs::path root_;
  const std::vector<std::string> nvidia_{"nv_dmabuf"};
};

TEST_F(DmabufCheck, NvidiaDmabufIsAllowed) {
  add_fd(9, "/dmabuf:", "nv_dmabuf");
  DmabufVerdict v = check_dmabuf_fd(77, 9, nvidia_, root_.string());
  EXPECT_TRUE(v.allowed) << v.reason;
  EXPECT_EQ(v.exporter, "nv_dmabuf");
}

TEST_F(DmabufCheck, OtherExporterIsRefused) {
  add_fd(9, "/dmabuf:", "udmabuf");
  DmabufVerdict v = check_dmabuf_fd(77, 9, nvidia_, root_.string());
  EXPECT_FALSE(v.allowed);
  EXPECT_NE(v.reason.find("exported by 'udmabuf'"), std::string::npos) << v.reason;
}

TEST_F(DmabufCheck, NonDmabufAndClosedFdsAreRefused) {
  add_fd(5, "/memfd:x (deleted)", "");
  EXPECT_NE(check_dmabuf_fd(77, 5, nvidia_, root_.string()).reason.find("not a dma-buf"),
            std::string::npos);
  EXPECT_NE(check_dmabuf_fd(77, 6, nvidia_, root_.string()).reason.find("not open"),
            std::string::npos);
}

TEST_F(DmabufCheck, CapabilityProbePasses) {
  EXPECT_TRUE(check_dmabuf_fd(77, -1, nvidia_, root_.string()).allowed);
}

}  // namespace
}  // namespace gdrproxy::proxy
