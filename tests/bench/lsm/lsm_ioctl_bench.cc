// Benchmark, not a test: what a device-ioctl decision costs when the BPF LSM judge of `gdrproxy
// run --lsm` and `gdrproxy agent --lsm` (proxy/sandbox/ioctl_lsm.*) makes it in the caller's own
// syscall, against the same ioctl with no program, in one run: the caller judged by a cgroup
// (the agent's containers: its ancestors looked up) and by a mark (run's sandboxes). The judge gets
// tables of the bench's own: /dev/null is a granted node, one request is allowed on it and another
// is not. It also checks that the judge decides: the allowed request reaches the driver (/dev/null
// answers ENOTTY), the other is refused with EPERM, and another device is not judged. Needs root
// and the BPF LSM active (exits 77 otherwise, saying why).
//
// Usage: lsm_ioctl_bench [N]
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "proxy/sandbox/ioctl_lsm.h"

namespace {

constexpr uint32_t kAllowedCmd = 0xc0104629;  // RM_FREE's encoding: any number will do
constexpr uint32_t kDeniedCmd = 0xc030462b;

double ns_per_ioctl(int fd, uint32_t cmd, int n, int& last_errno) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    if (::ioctl(fd, cmd, nullptr) != 0) last_errno = errno;
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
         n;
}

double median_of_5(int fd, uint32_t cmd, int n, int& last_errno) {
  std::vector<double> v;
  for (int r = 0; r < 5; ++r) v.push_back(ns_per_ioctl(fd, cmd, n, last_errno));
  std::sort(v.begin(), v.end());
  return v[2];
}

}  // namespace

int main(int argc, char** argv) {
  using gdrproxy::proxy::IoctlLsm;
  const int n = argc > 1 ? std::atoi(argv[1]) : 200000;
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int zero_fd = ::open("/dev/zero", O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (null_fd < 0 || zero_fd < 0 || ::fstat(null_fd, &st) != 0) return 1;

  int err = 0;
  const double native = median_of_5(null_fd, kAllowedCmd, n, err);

  gdrproxy::proxy::IoctlLsmTables tables;
  tables.nodes = {{st.st_rdev, true}};
  tables.untrapped = {kAllowedCmd, kDeniedCmd};
  tables.allowed = {{st.st_rdev, kAllowedCmd}};
  std::string why;
  const auto judge = IoctlLsm::load(why);
  if (!judge) {
    std::printf("SKIP: %s\n", why.c_str());
    return 77;
  }
  judge->add_scope(1, tables);
  // Attached, this process not judged: the cost every other process on the host pays.
  int err_other = 0;
  const double other = median_of_5(null_fd, kAllowedCmd, n, err_other);
  // Judged by its cgroup, two levels down (as a container's): a cgroup of its own, made here.
  double by_cgroup = 0;
  int err_cgroup = 0;
  const std::string own = "/gdrproxy-lsm-bench-" + std::to_string(::getpid());
  const std::string parent_dir = "/sys/fs/cgroup" + own;
  if (::mkdir(parent_dir.c_str(), 0755) == 0 && ::mkdir((parent_dir + "/c").c_str(), 0755) == 0 &&
      static_cast<bool>(std::ofstream(parent_dir + "/c/cgroup.procs") << ::getpid())) {
    if (const auto cg = gdrproxy::cgroup_v2(own + "/c", why)) {
      judge->judge_cgroup(*cg, 1);
      by_cgroup = median_of_5(null_fd, kAllowedCmd, n, err_cgroup);
      judge->forget_scope(1);
      judge->add_scope(1, tables);
    }
  }
  std::ofstream("/sys/fs/cgroup/cgroup.procs") << ::getpid();
  ::rmdir((parent_dir + "/c").c_str());
  ::rmdir(parent_dir.c_str());
  judge->judge_task(::getpid(), 1);
  int err_allowed = 0, err_denied = 0, err_unpoliced = 0;
  const double allowed = median_of_5(null_fd, kAllowedCmd, n, err_allowed);
  const double denied = median_of_5(null_fd, kDeniedCmd, n, err_denied);
  median_of_5(zero_fd, kDeniedCmd, 1000, err_unpoliced);

  std::printf("BPF LSM file_ioctl decision, %d ioctls x 5 (median), ns per call\n", n);
  std::printf("%-44s %9s %9s\n", "setup", "ns/call", "vs native");
  std::printf("%-44s %9.0f %9.2f\n", "native (no program)", native, 1.0);
  std::printf("%-44s %9.0f %9.2f\n", "program attached, caller not judged", other, other / native);
  if (by_cgroup > 0)
    std::printf("%-44s %9.0f %9.2f\n", "judged by its cgroup, allowed", by_cgroup,
                by_cgroup / native);
  else
    std::printf("%-44s %9s %9s\n", "judged by its cgroup (no cgroup2 here)", "-", "-");
  std::printf("%-44s %9.0f %9.2f\n", "judged by a mark, allowed", allowed, allowed / native);
  std::printf("%-44s %9.0f %9.2f\n", "judged, denied (EPERM, driver not called)", denied,
              denied / native);
  const bool ok = err_allowed == ENOTTY && err_denied == EPERM && err_unpoliced == ENOTTY &&
                  (by_cgroup == 0 || err_cgroup == ENOTTY);
  std::printf("decisions: allowed -> %s, denied -> %s, unpoliced device -> %s: %s\n",
              strerrorname_np(err_allowed), strerrorname_np(err_denied),
              strerrorname_np(err_unpoliced), ok ? "as expected" : "WRONG");
  return ok ? 0 : 1;
}
