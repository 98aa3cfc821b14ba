// Benchmark, not a test: what a device-ioctl decision costs when a BPF LSM program makes it in
// the caller's own syscall (ioctl_lsm.bpf.c), against the same ioctl with no program, in one run.
// It also checks that the program decides: a listed request reaches the driver (/dev/null
// answers ENOTTY), an unlisted one on the policed device is refused with EPERM, and another
// device is not judged. Needs root and "bpf" in /sys/kernel/security/lsm (exits 77 otherwise).
// Usage: lsm_ioctl_bench BPF_OBJECT [N]
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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

namespace {

constexpr uint32_t kAllowedCmd = 0xc0104629;  // RM_FREE's encoding: any number will do
constexpr uint32_t kDeniedCmd = 0xc030462b;

// The kernel's internal dev_t, as struct inode holds it.
uint32_t kernel_dev(dev_t d) {
  return (major(d) << 20) | minor(d);
}

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
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s BPF_OBJECT [N]\n", argv[0]);
    return 2;
  }
  const int n = argc > 2 ? std::atoi(argv[2]) : 200000;
  std::string lsms;
  std::ifstream lsm_file("/sys/kernel/security/lsm");
  if (!lsm_file) {
    std::printf(
        "SKIP: /sys/kernel/security/lsm is unreadable (mount -t securityfs securityfs "
        "/sys/kernel/security)\n");
    return 77;
  }
  std::getline(lsm_file, lsms);
  if (lsms.find("bpf") == std::string::npos) {
    std::printf(
        "SKIP: the BPF LSM is not active (/sys/kernel/security/lsm: '%s'; boot with "
        "lsm=...,bpf)\n",
        lsms.c_str());
    return 77;
  }
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int zero_fd = ::open("/dev/zero", O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (null_fd < 0 || zero_fd < 0 || ::fstat(null_fd, &st) != 0) return 1;

  int err = 0;
  const double native = median_of_5(null_fd, kAllowedCmd, n, err);

  bpf_object* obj = bpf_object__open_file(argv[1], nullptr);
  if (!obj || bpf_object__load(obj) != 0) {
    std::fprintf(stderr, "cannot load %s: %s\n", argv[1], std::strerror(errno));
    return 1;
  }
  bpf_program* prog = bpf_object__find_program_by_name(obj, "police_ioctl");
  bpf_link* link = prog ? bpf_program__attach_lsm(prog) : nullptr;
  if (!link) {
    std::fprintf(stderr, "cannot attach the LSM program: %s\n", std::strerror(errno));
    return 1;
  }
  const uint32_t tgid = static_cast<uint32_t>(::getpid());
  const uint32_t rdev = kernel_dev(st.st_rdev);
  const uint8_t one = 1;
  struct {
    uint32_t rdev, cmd;
  } key{rdev, kAllowedCmd};
  bpf_map__update_elem(bpf_object__find_map_by_name(obj, "policed"), &rdev, sizeof rdev, &one, 1,
                       BPF_ANY);
  bpf_map__update_elem(bpf_object__find_map_by_name(obj, "allowed"), &key, sizeof key, &one, 1,
                       BPF_ANY);
  // Attached, this process not judged: the cost every other process on the host pays.
  int err_other = 0;
  const double other = median_of_5(null_fd, kAllowedCmd, n, err_other);
  bpf_map__update_elem(bpf_object__find_map_by_name(obj, "sandboxed"), &tgid, sizeof tgid, &one, 1,
                       BPF_ANY);
  int err_allowed = 0, err_denied = 0, err_unpoliced = 0;
  const double allowed = median_of_5(null_fd, kAllowedCmd, n, err_allowed);
  const double denied = median_of_5(null_fd, kDeniedCmd, n, err_denied);
  median_of_5(zero_fd, kDeniedCmd, 1000, err_unpoliced);
  bpf_link__destroy(link);
  bpf_object__close(obj);

  std::printf("BPF LSM file_ioctl decision, %d ioctls x 5 (median), ns per call\n", n);
  std::printf("%-44s %9s %9s\n", "setup", "ns/call", "vs native");
  std::printf("%-44s %9.0f %9.2f\n", "native (no program)", native, 1.0);
  std::printf("%-44s %9.0f %9.2f\n", "program attached, caller not judged", other, other / native);
  std::printf("%-44s %9.0f %9.2f\n", "judged, allowed (reaches the driver)", allowed,
              allowed / native);
  std::printf("%-44s %9.0f %9.2f\n", "judged, denied (EPERM, driver not called)", denied,
              denied / native);
  const bool ok = err_allowed == ENOTTY && err_denied == EPERM && err_unpoliced == ENOTTY;
  std::printf("decisions: allowed -> %s, denied -> %s, unpoliced device -> %s: %s\n",
              strerrorname_np(err_allowed), strerrorname_np(err_denied),
              strerrorname_np(err_unpoliced), ok ? "as expected" : "WRONG");
  return ok ? 0 : 1;
}
