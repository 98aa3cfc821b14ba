// The in-kernel ALLOW block, run by the real kernel: a child installs the block in front of a
// program that refuses ioctl and fcntl with EPERM, then tries requests. The idea not to miss:
// the block must allow exactly the listed requests of exactly the ioctl syscall, and let every
// other call fall through to the program behind it, which is what decides them.
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "proxy/sandbox/ioctl_allow_bpf.h"

namespace gdrproxy::proxy {
namespace {

// A call the child makes under the filter: ioctl(fd, request) or fcntl(fd, F_GETFL).
struct Try {
  bool fcntl = false;
  uint64_t request = 0;
};

// The errno each call ends with (0 = success) under block(allowed) + the refusing program.
std::vector<int> run_under_filter(const std::vector<uint32_t>& allowed,
                                  const std::vector<Try>& tries) {
  std::vector<sock_filter> prog = ioctl_allow_block(allowed);
  const std::vector<sock_filter> refuse = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fcntl, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  prog.insert(prog.end(), refuse.begin(), refuse.end());
  int p[2];
  if (::pipe(p) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    const int fd = ::open("/dev/null", O_RDONLY);
    sock_fprog fprog{static_cast<unsigned short>(prog.size()), prog.data()};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0)
      ::_exit(2);
    std::vector<int> errs;
    for (const Try& t : tries) {
      const long rc =
          t.fcntl ? ::syscall(SYS_fcntl, fd, F_GETFL) : ::syscall(SYS_ioctl, fd, t.request, 0);
      errs.push_back(rc < 0 ? errno : 0);
    }
    const ssize_t n = static_cast<ssize_t>(errs.size() * sizeof(int));
    ::_exit(::write(p[1], errs.data(), static_cast<size_t>(n)) == n ? 0 : 3);
  }
  ::close(p[1]);
  std::vector<int> errs(tries.size(), -1);
  const ssize_t n = ::read(p[0], errs.data(), errs.size() * sizeof(int));
  ::close(p[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  EXPECT_EQ(n, static_cast<ssize_t>(errs.size() * sizeof(int)));
  return errs;
}

TEST(IoctlAllowBlock, AllowsExactlyTheListedRequestsAndNothingElse) {
  // 40 requests: three groups of comparisons, with gaps between and inside them.
  std::vector<uint32_t> allowed;
  for (uint32_t v = 1; v <= 30; ++v) allowed.push_back(v * 3);
  for (uint32_t v : {0x30000001u, 0xc0104629u, 0xc038464eu, 0xc0104600u, 0xc0104700u, 0xc0104800u,
                     0xc0104900u, 0xc0104a00u, 0xc0104b00u, 0xc0104c00u})
    allowed.push_back(v);
  std::sort(allowed.begin(), allowed.end());
  ASSERT_EQ(allowed.size(), 40u);
  std::vector<Try> tries;
  std::map<size_t, int> want;
  auto expect = [&](uint64_t request, int err) {
    want[tries.size()] = err;
    tries.push_back({false, request});
  };
  for (uint32_t v : allowed) {
    expect(v, ENOTTY);     // ran: /dev/null has no ioctls
    expect(v - 1, EPERM);  // its neighbours fall through to the program behind
    expect(v + 1, EPERM);
    // The kernel truncates the request to 32 bits, so high bits name the same request.
    expect((uint64_t{0xdead} << 32) | v, ENOTTY);
  }
  expect(0, EPERM);
  expect(0xffffffffu, EPERM);
  expect(0xc0104629u ^ 0x00004000u, EPERM);  // another type byte
  // The same number as another syscall's second argument is not an ioctl.
  want[tries.size()] = EPERM;
  tries.push_back({true, 0});
  ASSERT_TRUE(std::binary_search(allowed.begin(), allowed.end(), uint32_t{F_GETFL}));
  const std::vector<int> got = run_under_filter(allowed, tries);
  ASSERT_EQ(got.size(), tries.size());
  for (const auto& [i, err] : want)
    EXPECT_EQ(got[i], err) << (tries[i].fcntl ? "fcntl" : "ioctl") << " 0x" << std::hex
                           << tries[i].request;
}

TEST(IoctlAllowBlock, AnEmptyListAddsNothing) {
  EXPECT_TRUE(ioctl_allow_block({}).empty());
}

TEST(IoctlAllowBlock, UnsortedOrRepeatedListsAreRefused) {
  const std::vector<uint32_t> unsorted{5, 3};
  const std::vector<uint32_t> repeated{3, 3};
  EXPECT_ANY_THROW(ioctl_allow_block(unsorted));
  EXPECT_ANY_THROW(ioctl_allow_block(repeated));
}

}  // namespace
}  // namespace gdrproxy::proxy
