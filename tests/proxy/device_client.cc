// A test client that performs one precise device operation and prints its outcome on stdout as
// "OK ..." or "ERR <errno name>". The integration tests run it under `gdrproxy run` to check
// brokering, denial and every path trick with real syscalls.
#include <fcntl.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_cm.h>
#include <rdma/rdma_user_ioctl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "proxy/exercise/verbs_request.h"

using gdrproxy::proxy::reg_dmabuf_mr;
using gdrproxy::proxy::VerbsRequest;

namespace {

int fail(const char* what) {
  std::printf("ERR %s (%s)\n", strerrorname_np(errno), what);
  return 0;
}

int open_mode(const char* path, const std::string& mode) {
  int flags = mode == "rdonly"   ? O_RDONLY
              : mode == "wronly" ? O_WRONLY
              : mode == "path"   ? O_PATH
                                 : O_RDWR;
  return ::open(path, flags | O_CLOEXEC);
}

// INVOKE_WRITE(ALLOC_PD): a well-formed uverbs request; `cmd_high` sets bits the kernel ignores.
int alloc_pd(int fd, uint64_t cmd_high = 0) {
  static ib_uverbs_alloc_pd in{};
  static ib_uverbs_alloc_pd_resp out{};
  return VerbsRequest(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE)
      .ptr(UVERBS_ATTR_CORE_IN, &in, sizeof in)
      .ptr(UVERBS_ATTR_CORE_OUT, &out, sizeof out)
      .inline_u64(UVERBS_ATTR_WRITE_CMD, IB_USER_VERBS_CMD_ALLOC_PD, 4)
      .issue(fd, 0, cmd_high);
}

int do_ioctl(const char* path, uint64_t high = 0) {
  int fd = ::open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return fail("open");
  if (int rc = alloc_pd(fd, high); rc != 0) {
    errno = -rc;
    return fail("ioctl");
  }
  std::printf("OK ioctl\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: %s open PATH MODE | reopen PATH | opath-reopen PATH | ioctl PATH |\n"
                 "  high-bits PATH | bad-pointer PATH | fork-tree PATH | symlink PATH LINK\n",
                 argv[0]);
    return 2;
  }
  const std::string op = argv[1];
  const char* path = argv[2];
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  if (op == "open") {
    int fd = open_mode(path, argc > 3 ? argv[3] : "rdwr");
    if (fd < 0) return fail("open");
    std::printf("OK fd=%d\n", fd);
  } else if (op == "reopen" || op == "opath-reopen") {
    int fd = ::open(path, (op == "reopen" ? O_RDWR : O_PATH) | O_CLOEXEC);
    if (fd < 0) return fail("first open");
    const std::string again = "/proc/self/fd/" + std::to_string(fd);
    int fd2 = ::open(again.c_str(), O_RDWR | O_CLOEXEC);
    if (fd2 < 0) return fail("re-open");
    std::printf("OK fd=%d\n", fd2);
  } else if (op == "symlink") {
    ::unlink(argv[3]);
    if (::symlink(path, argv[3]) != 0) return fail("symlink");
    int fd = ::open(argv[3], O_RDWR | O_CLOEXEC);
    ::unlink(argv[3]);
    if (fd < 0) return fail("open");
    std::printf("OK fd=%d\n", fd);
  } else if (op == "cm-write") {
    // An rdma_cm CREATE_ID command as librdmacm writes it, then N one-byte writes to /dev/null.
    int fd = ::open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return fail("open");
    struct {
      rdma_ucm_cmd_hdr hdr;
      rdma_ucm_create_id cmd;
    } w{};
    rdma_ucm_create_id_resp resp{};
    w.hdr.cmd = RDMA_USER_CM_CMD_CREATE_ID;
    w.hdr.in = sizeof w.cmd;
    w.hdr.out = sizeof resp;
    w.cmd.response = reinterpret_cast<uintptr_t>(&resp);
    w.cmd.ps = RDMA_PS_TCP;
    w.cmd.qp_type = 2;
    std::printf("OK cm fd=%d\n", fd);
    int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    for (int i = 0; i < (argc > 3 ? std::atoi(argv[3]) : 0); ++i) (void)!::write(null, "x", 1);
    if (::write(fd, &w, sizeof w) < 0) return fail("cm write");
    std::printf("OK cm write\n");
  } else if (op == "reg-dmabuf") {
    // MR.REG_DMABUF_MR with an fd that is a memfd (not a dma-buf) or -1 (NCCL's probe).
    int fd = ::open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return fail("open");
    const bool probe = argc > 3 && std::string(argv[3]) == "-1";
    const int buf_fd = probe ? -1 : memfd_create("not-a-dmabuf", MFD_CLOEXEC);
    if (int rc = reg_dmabuf_mr(fd, buf_fd, 4096); rc != 0) {
      errno = -rc;
      return fail("reg-dmabuf");
    }
    std::printf("OK reg-dmabuf\n");
  } else if (op == "ioctl") {
    return do_ioctl(path);
  } else if (op == "high-bits") {
    return do_ioctl(path, 0xdead00000000ull);
  } else if (op == "bad-pointer") {
    int fd = ::open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return fail("open");
    if (::ioctl(fd, RDMA_VERBS_IOCTL, reinterpret_cast<void*>(0x10)) != 0) return fail("ioctl");
    std::printf("OK ioctl\n");
  } else if (op == "fork-tree") {
    // Parent, child and grandchild each open the device and issue one ioctl.
    pid_t c = ::fork();
    if (c == 0) {
      pid_t g = ::fork();
      if (g == 0) return do_ioctl(path);
      do_ioctl(path);
      ::waitpid(g, nullptr, 0);
      return 0;
    }
    do_ioctl(path);
    ::waitpid(c, nullptr, 0);
  } else {
    std::fprintf(stderr, "unknown operation %s\n", op.c_str());
    return 2;
  }
  return 0;
}
