// A test client that performs one precise device operation and prints its outcome on stdout as
// "OK ..." or "ERR <errno name>". The integration tests run it under `gdrproxy run` to check
// brokering, denial and every path trick with real syscalls.
#include <fcntl.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_cm.h>
#include <rdma/rdma_user_ioctl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "demo/verbs_request.h"
#include "proxy/abi/uverbs_uapi_newer.h"
#include "proxy/observe/trap_copy_slot.h"

using gdrproxy::demo::reg_dmabuf_mr;
using gdrproxy::demo::VerbsRequest;

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

// This process's id in the host's pid namespace: the test's server beside the sandbox answers a
// connection to `socket_path` with the SO_PEERCRED pid it sees (the kernel translates it into
// the server's namespace). The sandbox has a pid namespace of its own; the trap-copy slot is
// chosen by the host's id.
pid_t host_pid(const char* socket_path) {
  int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", socket_path);
  char buf[32] = {};
  const bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::read(s, buf, sizeof buf - 1) > 0;
  ::close(s);
  return ok ? static_cast<pid_t>(std::atoi(buf)) : -1;
}

// Issues INVOKE_WRITE(`cmd`) `calls` times from one static buffer (the same address in every
// process forked from this one); returns how many calls did not fail with `expected`.
int issue_often(int fd, uint32_t cmd, void* in, size_t in_len, void* out, size_t out_len, int calls,
                int expected) {
  alignas(64) static uint8_t request[256];
  VerbsRequest r(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE);
  r.ptr(UVERBS_ATTR_CORE_IN, in, in_len)
      .ptr(UVERBS_ATTR_CORE_OUT, out, out_len)
      .inline_u64(UVERBS_ATTR_WRITE_CMD, cmd, 4);
  const std::vector<uint8_t>& b = r.bytes();
  std::memcpy(request, b.data(), std::min(b.size(), sizeof request));
  int wrong = 0;
  for (int i = 0; i < calls; ++i)
    if (::ioctl(fd, RDMA_VERBS_IOCTL, request) == 0 || errno != expected) ++wrong;
  return wrong;
}

// Two processes whose host ids share a trap-copy slot (id modulo 2048) issue `calls` ioctls each
// at once, with the same fd number, request and argument address (a static buffer inherited by
// fork, each process writing its own copy): only the notification's id and the caller tell their
// slot's copies apart. The parent's argument is INVOKE_WRITE(REG_MR), the child's
// INVOKE_WRITE(ALLOC_PD); under deny-reg-mr.json on the stand-in node each must get its own
// verdict every time (EACCES; ENOTTY from the node). A call judged by the other's copy gets the
// other's. Prints "NONE ..." when no child landed on the slot (a host busy taking ids).
int slot_collide(const char* path, const char* socket_path, int calls) {
  constexpr pid_t kSlots = GDRPROXY_TRAP_COPY_SLOTS;
  static ib_uverbs_reg_mr mr_in;
  static ib_uverbs_reg_mr_resp mr_out;
  static char region[4096];
  int fd = ::open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return fail("open");
  const pid_t first = host_pid(socket_path);
  if (first <= 0) return fail("host pid");
  // Host ids are handed out in order: within a few thousand forks one lands on the slot. A child
  // on another slot leaves at once; the one on the slot says so through the pipe and stays.
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return fail("pipe");
  pid_t child = 0;
  // Other processes take ids meanwhile; 16 rounds of the slots leave a busy host room.
  for (int tries = 0; tries < 16 * kSlots && !child; ++tries) {
    const pid_t c = ::fork();
    if (c < 0) return fail("fork");
    if (c == 0) {
      const pid_t me = host_pid(socket_path);
      const char mine = me > 0 && me % kSlots == first % kSlots ? 'y' : 'n';
      (void)!::write(pipefd[1], &mine, 1);
      if (mine == 'n') ::_exit(0);
      static ib_uverbs_alloc_pd pd_in;
      static ib_uverbs_alloc_pd_resp pd_out;
      ::_exit(issue_often(fd, IB_USER_VERBS_CMD_ALLOC_PD, &pd_in, sizeof pd_in, &pd_out,
                          sizeof pd_out, calls, ENOTTY)
                  ? 1
                  : 0);
    }
    char theirs = 'n';
    if (::read(pipefd[0], &theirs, 1) != 1) theirs = 'n';
    if (theirs == 'y')
      child = c;
    else
      ::waitpid(c, nullptr, 0);
  }
  if (!child) {
    std::printf("NONE no child's host id shared the slot of %d\n", first);
    return 0;
  }
  mr_in.start = reinterpret_cast<uintptr_t>(region);
  mr_in.length = sizeof region;
  mr_in.hca_va = mr_in.start;
  mr_in.access_flags = IB_UVERBS_ACCESS_LOCAL_WRITE;
  const int wrong = issue_often(fd, IB_USER_VERBS_CMD_REG_MR, &mr_in, sizeof mr_in, &mr_out,
                                sizeof mr_out, calls, EACCES);
  int status = 0;
  ::waitpid(child, &status, 0);
  const bool child_wrong = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  std::printf(
      "%s slot-collide host pids %d and one on its slot: REG_MR judged wrongly %d times, "
      "ALLOC_PD %s\n",
      wrong || child_wrong ? "ERR" : "OK", first, wrong,
      child_wrong ? "judged wrongly" : "judged right every time");
  return 0;
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
                 "  high-bits PATH | bad-pointer PATH | fork-tree PATH | symlink PATH LINK |\n"
                 "  slot-collide PATH SOCKET [CALLS]\n",
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
  } else if (op == "newer-dmabuf") {
    // The verbs of newer kernels that hand the device a dma-buf, each with a memfd:
    // MR.REG_MR with its fd, CQ.CREATE_CQ with a buffer fd, QP.CREATE_QP with two buffer
    // descriptors (the second a memfd), and GET_CONTEXT with capability fds.
    namespace nw = gdrproxy::proxy::uverbs::newer;
    int fd = ::open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return fail("open");
    const int mem = memfd_create("not-a-dmabuf", MFD_CLOEXEC);
    const std::string which = argc > 3 ? argv[3] : "";
    int rc = -EINVAL;
    if (which == "reg-mr") {
      rc = VerbsRequest(UVERBS_OBJECT_MR, nw::kMethodRegMr)
               .handle(nw::kAttrRegMrHandle, 0)
               .inline_u64(nw::kAttrRegMrLength, 4096)
               .inline_u64(nw::kAttrRegMrFdOffset, 0)
               .fd(nw::kAttrRegMrFd, mem)
               .issue(fd);
    } else if (which == "cq-buffer") {
      rc = VerbsRequest(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE)
               .handle(UVERBS_ATTR_CREATE_CQ_HANDLE, 0)
               .inline_u64(UVERBS_ATTR_CREATE_CQ_CQE, 16, 4)
               .fd(nw::kAttrCreateCqBufferFd, mem)
               .inline_u64(nw::kAttrCreateCqBufferLength, 4096)
               .issue(fd);
    } else if (which == "qp-umem") {
      // The first descriptor a dma-buf of fd -1 (passes the check), the second the memfd.
      uint8_t sq[nw::kBufferDescSize] = {}, rq[nw::kBufferDescSize] = {};
      const int32_t none = -1;
      std::memcpy(sq + nw::kBufferDescFdOffset, &none, sizeof none);
      std::memcpy(rq + nw::kBufferDescFdOffset, &mem, sizeof mem);
      rc = VerbsRequest(UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE)
               .handle(UVERBS_ATTR_CREATE_QP_HANDLE, 0)
               .ptr(nw::kAttrCreateQpSqBufUmem, sq, sizeof sq)
               .ptr(nw::kAttrCreateQpRqBufUmem, rq, sizeof rq)
               .issue(fd);
    } else if (which == "ucap") {
      int fds[1] = {mem};
      uint32_t vectors = 0;
      rc = VerbsRequest(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT)
               .ptr(UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, &vectors, sizeof vectors)
               .ptr(nw::kAttrGetContextFdArr, fds, sizeof fds)
               .issue(fd);
    } else if (which == "unnamed-attr") {
      // CQ.CREATE_CQ with a core attribute id no kernel has yet.
      rc = VerbsRequest(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE)
               .handle(UVERBS_ATTR_CREATE_CQ_HANDLE, 0)
               .inline_u64(UVERBS_ATTR_CREATE_CQ_CQE, 16, 4)
               .inline_u64(0x7ff, mem, 4)
               .issue(fd);
    } else {
      return 2;
    }
    if (rc != 0) {
      errno = -rc;
      return fail(("newer-dmabuf " + which).c_str());
    }
    std::printf("OK newer-dmabuf %s\n", which.c_str());
  } else if (op == "ioctl") {
    return do_ioctl(path);
  } else if (op == "slot-collide") {
    if (argc < 4) return 2;
    return slot_collide(path, argv[3], argc > 4 ? std::atoi(argv[4]) : 20000);
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
