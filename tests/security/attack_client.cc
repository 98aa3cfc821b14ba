// What a hostile tenant does inside `gdrproxy run`, one attack per invocation, each outcome
// printed on one line as "<ATTACK> OK ..." or "<ATTACK> ERR <errno name>". The idea not to miss:
// whether an ungranted device was *used* is judged by a probe the seccomp filter never traps
// (TCGETS): EACCES means the kernel (Landlock) refused the ioctl, anything else (ENOTTY from a
// stand-in device) means the request reached the driver. sandbox_attacks.sh asserts on these
// lines; the tests run it on stand-in device nodes (gdrproxy-testkit standin).
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/openat2.h>
#include <linux/userfaultfd.h>
#include <sched.h>
#include <signal.h>
#include <sys/io.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "proxy/engine/fd_passing.h"

namespace {

constexpr unsigned long kFibmap = 1;  // FIBMAP, _IO(0x00, 1) (linux/fs.h clashes with sys/mount.h)

const char* ename(int e) {
  const char* n = strerrorname_np(e);
  return n ? n : "E?";
}

int report_err(const char* attack, int err) {
  std::printf("%s ERR %s\n", attack, ename(err));
  return 0;
}

// SOCKET as a UNIX address: a path, or "@NAME" in the abstract namespace (a network
// namespace's, which a pod's containers share). Returns the address's length.
socklen_t unix_address(const char* socket, sockaddr_un& a) {
  a.sun_family = AF_UNIX;
  const bool abstract = socket[0] == '@';
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", socket);
  if (abstract) a.sun_path[0] = '\0';
  return abstract ? static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + std::strlen(socket))
                  : static_cast<socklen_t>(sizeof a);
}

int access_mode(const std::string& m) {
  if (m == "rdonly") return O_RDONLY;
  if (m == "wronly") return O_WRONLY;
  if (m == "rdwr") return O_RDWR;
  if (m == "mode3") return O_ACCMODE;  // no read, no write: an ioctl-only open
  std::fprintf(stderr, "unknown access mode %s\n", m.c_str());
  std::exit(2);
}

// What the holder of `fd` can do with the device: an untrapped ioctl, a read, a write.
std::string probe(int fd) {
  std::string out;
  termios t;
  out += ::ioctl(fd, TCGETS, &t) == 0 ? "ioctl=OK" : std::string("ioctl=") + ename(errno);
  char b = 0;
  out += ::read(fd, &b, 1) >= 0 ? " read=OK" : std::string(" read=") + ename(errno);
  out += ::write(fd, &b, 1) >= 0 ? " write=OK" : std::string(" write=") + ename(errno);
  return out;
}

int report_fd(const char* attack, int fd) {
  if (fd < 0) return report_err(attack, errno);
  std::printf("%s OK %s\n", attack, probe(fd).c_str());
  ::close(fd);
  return 0;
}

// IORING_OP_OPENAT(2) through a raw ring: never seen by seccomp.
int io_uring_open(const char* path, int flags, bool openat2) {
  io_uring_params p{};
  const int ring = static_cast<int>(::syscall(__NR_io_uring_setup, 4, &p));
  if (ring < 0) return -1;
  const size_t sq_size = p.sq_off.array + p.sq_entries * sizeof(unsigned);
  const size_t cq_size = p.cq_off.cqes + p.cq_entries * sizeof(io_uring_cqe);
  const bool single = p.features & IORING_FEAT_SINGLE_MMAP;
  auto* sq = static_cast<uint8_t*>(::mmap(nullptr, single ? std::max(sq_size, cq_size) : sq_size,
                                          PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring,
                                          IORING_OFF_SQ_RING));
  auto* cq =
      single ? sq
             : static_cast<uint8_t*>(::mmap(nullptr, cq_size, PROT_READ | PROT_WRITE,
                                            MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING));
  auto* sqes = static_cast<io_uring_sqe*>(::mmap(nullptr, p.sq_entries * sizeof(io_uring_sqe),
                                                 PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                                                 ring, IORING_OFF_SQES));
  if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) return -1;
  static open_how how{};
  how.flags = static_cast<uint64_t>(flags);
  io_uring_sqe* e = &sqes[0];
  std::memset(e, 0, sizeof *e);
  e->fd = AT_FDCWD;
  e->addr = reinterpret_cast<uintptr_t>(path);
  if (openat2) {
    e->opcode = IORING_OP_OPENAT2;
    e->len = sizeof how;
    e->off = reinterpret_cast<uintptr_t>(&how);
  } else {
    e->opcode = IORING_OP_OPENAT;
    e->open_flags = static_cast<uint32_t>(flags);
  }
  auto* tail = reinterpret_cast<unsigned*>(sq + p.sq_off.tail);
  const unsigned mask = *reinterpret_cast<unsigned*>(sq + p.sq_off.ring_mask);
  reinterpret_cast<unsigned*>(sq + p.sq_off.array)[*tail & mask] = 0;
  __atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
  if (::syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, nullptr, 0) < 0) return -1;
  const unsigned head =
      __atomic_load_n(reinterpret_cast<unsigned*>(cq + p.cq_off.head), __ATOMIC_ACQUIRE);
  const unsigned cmask = *reinterpret_cast<unsigned*>(cq + p.cq_off.ring_mask);
  const int res = reinterpret_cast<io_uring_cqe*>(cq + p.cq_off.cqes)[head & cmask].res;
  if (res < 0) {
    errno = -res;
    return -1;
  }
  return res;
}

// name_to_handle_at + open_by_handle_at: an open by inode, never by path. The handle is decoded
// in the mount of `mount_file` (any file of the device's filesystem, /dev/null for devtmpfs).
int handle_open(const char* path, int flags, const char* mount_file) {
  std::vector<char> buf(sizeof(file_handle) + MAX_HANDLE_SZ);
  auto* h = reinterpret_cast<file_handle*>(buf.data());
  h->handle_bytes = MAX_HANDLE_SZ;
  int mount_id = 0;
  if (::name_to_handle_at(AT_FDCWD, path, h, &mount_id, 0) != 0) {
    std::printf("handle-open SKIP name_to_handle_at %s\n", ename(errno));
    std::exit(0);
  }
  const int mfd = ::open(mount_file, O_RDONLY | O_CLOEXEC);
  if (mfd < 0) return -1;
  return ::open_by_handle_at(mfd, h, flags | O_CLOEXEC);
}

// Whether trapped calls are still served: a write open is trapped (ENOSYS once the listener is
// gone, i.e. the supervisor died).
std::string serving() {
  char path[] = "/tmp/gdrproxy-attack-serving.XXXXXX";
  const int fd = ::mkstemp(path);  // O_RDWR|O_CREAT: trapped
  if (fd < 0) return std::string("serving=") + ename(errno);
  ::close(fd);
  ::unlink(path);
  return "serving=OK";
}

int recv_one_fd(const char* sock_path) {
  const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", sock_path);
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s, 1) != 0) return -1;
  const int c = ::accept(s, nullptr, nullptr);
  if (c < 0) return -1;
  std::string not_fd;
  return gdrproxy::proxy::recv_fd(c, not_fd);
}

uint32_t ioc(uint32_t dir, uint32_t type, uint32_t nr, uint32_t size) {
  return (dir << 30) | (size << 16) | (type << 8) | nr;
}

int usage() {
  std::fprintf(
      stderr,
      "usage: attack_client open PATH MODE syscall|io_uring|io_uring2|handle [MOUNT_FILE]\n"
      "       attack_client mknod PATH LIKE | link SRC DST | rename SRC DST\n"
      "       attack_client nvioctl PATH TYPE NR SIZE | nvxfer PATH TYPE NR SIZE\n"
      "       attack_client nvdevice CTL INSTANCE|unreadable [HOLD_GPU_NODE]\n"
      "       attack_client ioctl-mapped UVERBS_NODE FILE | fdioctl FD REQUEST [thread|fork]\n"
      "       attack_client userfaultfd | uffd-dev\n"
      "       attack_client kill-parent | kill-pgrp | kill-pidfd SOCKET\n"
      "       attack_client ptrace PID | fibmap FILE | ioperm | sethostname | mount DIR\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string what = argv[1];
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

  if (what == "open" && (argc == 5 || argc == 6)) {
    const int flags = access_mode(argv[3]) | O_CLOEXEC;
    const std::string via = argv[4];
    const std::string attack = "open-" + via;
    int fd = -1;
    if (via == "syscall")
      fd = static_cast<int>(::syscall(SYS_openat, AT_FDCWD, argv[2], flags));
    else if (via == "io_uring")
      fd = io_uring_open(argv[2], flags, false);
    else if (via == "io_uring2")
      fd = io_uring_open(argv[2], flags, true);
    else if (via == "handle")
      fd = handle_open(argv[2], flags, argc == 6 ? argv[5] : "/dev/null");
    else
      return usage();
    return report_fd(attack.c_str(), fd);
  }
  if (what == "mknod" && argc == 4) {
    // A node with the device number of LIKE (an ungranted node the tenant can stat).
    struct stat st;
    if (::stat(argv[3], &st) != 0) return report_err("mknod", errno);
    if (::mknod(argv[2], S_IFCHR | 0600, st.st_rdev) != 0) return report_err("mknod", errno);
    return report_fd("mknod", ::open(argv[2], O_RDONLY | O_CLOEXEC));
  }
  if ((what == "link" || what == "rename") && argc == 4) {
    const int rc = what == "link" ? ::link(argv[2], argv[3]) : ::rename(argv[2], argv[3]);
    if (rc != 0) return report_err(what.c_str(), errno);
    return report_fd(what.c_str(), ::open(argv[3], O_RDONLY | O_CLOEXEC));
  }
  if ((what == "nvioctl" || what == "nvxfer") && argc == 6) {
    // An NVIDIA frontend escape with a chosen type byte; the parameters are zeros (the stand-in
    // device refuses them; a denial answers EPERM before they get there).
    const uint32_t type = static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 0));
    const uint32_t nr = static_cast<uint32_t>(std::strtoul(argv[4], nullptr, 0));
    const uint32_t size = static_cast<uint32_t>(std::strtoul(argv[5], nullptr, 0));
    const int fd = ::open(argv[2], O_RDWR | O_CLOEXEC);
    if (fd < 0) return report_err("nvioctl-open", errno);
    static uint8_t params[16384];
    struct {
      uint32_t cmd, size;
      uint64_t ptr;
    } xfer{nr, size, reinterpret_cast<uintptr_t>(params)};
    const bool tunnel = what == "nvxfer";
    const uint32_t req = tunnel ? ioc(3, type, 211, sizeof xfer) : ioc(3, type, nr, size);
    void* arg = tunnel ? static_cast<void*>(&xfer) : static_cast<void*>(params);
    if (::ioctl(fd, req, arg) != 0) return report_err(what.c_str(), errno);
    std::printf("%s OK 0x%08x\n", what.c_str(), req);
    return 0;
  }
  if (what == "fdioctl" && (argc == 4 || argc == 5)) {
    // An ioctl on an fd the tenant already holds (inherited from whoever started the sandbox),
    // with zeroed parameters; "thread" issues it from a new thread, "fork" from a child process.
    const int fd = std::atoi(argv[2]);
    const auto req = static_cast<unsigned long>(std::strtoul(argv[3], nullptr, 0));
    const std::string from = argc == 5 ? argv[4] : "";
    static uint8_t params[16384];
    auto issue = [fd, req] { return ::ioctl(fd, req, params) == 0 ? 0 : errno; };
    int err = 0;
    if (from == "thread") {
      std::thread t([&] { err = issue(); });
      t.join();
    } else if (from == "fork") {
      const pid_t c = ::fork();
      if (c == 0) ::_exit(issue());
      int st = 0;
      if (c < 0 || ::waitpid(c, &st, 0) != c || !WIFEXITED(st))
        return report_err("fdioctl", ECHILD);
      err = WEXITSTATUS(st);
    } else {
      err = issue();
    }
    if (err != 0) return report_err("fdioctl", err);
    std::printf("fdioctl OK 0x%08lx\n", req);
    return 0;
  }
  if (what == "ioctl-mapped" && argc == 4) {
    // A uverbs ioctl whose argument lies in a mapping of FILE, never touched by the caller: the
    // supervisor's read of it faults the page in from FILE's filesystem (one that never answers
    // stalls that read).
    const int fd = ::open(argv[2], O_RDWR | O_CLOEXEC);
    if (fd < 0) return report_err("ioctl-mapped-open", errno);
    const int file = ::open(argv[3], O_RDONLY | O_CLOEXEC);
    if (file < 0) return report_err("ioctl-mapped-file", errno);
    void* p = ::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, file, 0);
    if (p == MAP_FAILED) return report_err("ioctl-mapped-mmap", errno);
    // RDMA_VERBS_IOCTL: _IOWR(0x1b, 1, struct ib_uverbs_ioctl_hdr), 24 bytes.
    if (::ioctl(fd, ioc(3, 0x1b, 1, 24), p) != 0) return report_err("ioctl-mapped", errno);
    std::printf("ioctl-mapped OK\n");
    return 0;
  }
  if (what == "nvdevice" && (argc == 4 || argc == 5)) {
    // RM_ALLOC(NV01_DEVICE_0) for device instance INSTANCE through the control node, the way a
    // tenant reaches a GPU whose node it was not granted: a root client, then the device object.
    // INSTANCE "unreadable" points the parameters at an unmapped page. HOLD: a GPU node to keep
    // open (the real driver requires the caller to hold some GPU's node).
    const int fd = ::open(argv[2], O_RDWR | O_CLOEXEC);
    if (fd < 0) return report_err("nvdevice-open", errno);
    if (argc == 5 && ::open(argv[4], O_RDWR | O_CLOEXEC) < 0)
      return report_err("nvdevice-hold", errno);
    struct {
      uint32_t hRoot, hObjectParent, hObjectNew, hClass;
      uint64_t pAllocParms;
      uint32_t paramsSize, status;
    } root{}, dev{};
    static_assert(sizeof root == 32);
    root.hClass = 0x41;  // NV01_ROOT_CLIENT
    const uint32_t alloc = ioc(3, 'F', 0x2b, sizeof root);
    // A stand-in answers no client; the device attempt is made anyway (with handle 0).
    const bool have_client = ::ioctl(fd, alloc, &root) == 0 && root.status == 0;
    struct {
      uint32_t deviceId, hClientShare, hTargetClient, hTargetDevice, flags, pad;
      uint64_t vaSpaceSize, vaStartInternal, vaLimitInternal;
      uint32_t vaMode, pad2;
    } params{};
    static_assert(sizeof params == 56);
    const bool unreadable = std::string(argv[3]) == "unreadable";
    void* hole = ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    params.deviceId = unreadable ? 0 : static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 0));
    params.hClientShare = root.hObjectNew;
    dev.hRoot = dev.hObjectParent = root.hObjectNew;
    dev.hObjectNew = 0xcafe0001;
    dev.hClass = 0x80;  // NV01_DEVICE_0
    dev.pAllocParms = reinterpret_cast<uintptr_t>(unreadable ? hole : &params);
    dev.paramsSize = sizeof params;
    if (::ioctl(fd, alloc, &dev) != 0) return report_err("nvdevice", errno);
    std::printf("nvdevice OK status=0x%x client=%s\n", dev.status, have_client ? "yes" : "no");
    return 0;
  }
  if (what == "userfaultfd") {
    // Both the full fd (root, or CAP_SYS_PTRACE) and the user-mode-only one (anyone).
    for (int flags : {O_CLOEXEC, O_CLOEXEC | 1 /* UFFD_USER_MODE_ONLY */}) {
      const int fd = static_cast<int>(::syscall(SYS_userfaultfd, flags));
      if (fd < 0) {
        std::printf("userfaultfd(%#x) ERR %s\n", flags, ename(errno));
      } else {
        std::printf("userfaultfd(%#x) OK\n", flags);
        ::close(fd);
      }
    }
    return 0;
  }
  if (what == "uffd-dev") {
    const int dev = ::open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
    if (dev < 0) return report_err("uffd-dev", errno);
    const int fd = ::ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC);
    if (fd < 0) return report_err("uffd-dev-new", errno);
    uffdio_api api{};
    api.api = UFFD_API;
    if (::ioctl(fd, UFFDIO_API, &api) != 0) return report_err("uffd-dev-api", errno);
    std::printf("uffd-dev OK\n");
    return 0;
  }
  if (what == "sendfd" && argc == 4) {
    // Another container's process opens its own device and hands the fd over a UNIX socket at
    // SOCKET (a path both see, or "@NAME": abstract, shared by a pod's containers through their
    // network namespace): one connection, bounded by an alarm.
    const int fd = ::open(argv[2], O_RDWR | O_CLOEXEC);
    if (fd < 0) return report_err("sendfd", errno);
    sockaddr_un a{};
    const socklen_t len = unix_address(argv[3], a);
    const int l = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (l < 0 || ::bind(l, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(l, 1) != 0)
      return report_err("sendfd", errno);
    ::alarm(60);
    const int c = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0 || !gdrproxy::proxy::send_fd(c, fd)) return report_err("sendfd", errno);
    std::printf("sendfd OK\n");
    return 0;
  }
  if (what == "recvfd" && argc == 4) {
    // The receiving side: connects to SOCKET (retried for 30 s), takes the fd and issues REQ on
    // it with zeroed parameters, as with fdioctl.
    sockaddr_un a{};
    const socklen_t len = unix_address(argv[2], a);
    const int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int tries = 300;
    while (::connect(c, reinterpret_cast<sockaddr*>(&a), len) != 0 && --tries > 0)
      ::usleep(100 * 1000);
    if (tries == 0) return report_err("recvfd", errno);
    std::string why;
    const int fd = gdrproxy::proxy::recv_fd(c, why);
    if (fd < 0) return report_err("recvfd", EBADF);
    const auto req = static_cast<unsigned long>(std::strtoul(argv[3], nullptr, 0));
    static uint8_t params[16384];
    if (::ioctl(fd, req, params) != 0) return report_err("recvfd", errno);
    std::printf("recvfd OK 0x%08lx\n", req);
    return 0;
  }
  if (what == "kill-parent") {
    // `kill -KILL $PPID`: the parent of the first sandboxed process was the supervisor.
    const pid_t ppid = ::getppid();
    const int rc = ::kill(ppid, SIGKILL);
    ::usleep(300 * 1000);
    std::printf("kill-parent %s ppid=%d %s\n", rc == 0 ? "OK" : ename(errno), ppid,
                serving().c_str());
    return 0;
  }
  if (what == "kill-pgrp") {
    // SIGKILL to the whole process group the sandbox was started in, which holds the
    // supervisor: sent by a child left in that group, while we move to a group of our own.
    int go[2];
    if (::pipe(go) != 0) return report_err("kill-pgrp", errno);
    const pid_t killer = ::fork();
    if (killer == 0) {
      char b;
      (void)!::read(go[0], &b, 1);
      ::kill(0, SIGKILL);
      ::_exit(0);
    }
    ::setpgid(0, 0);
    (void)!::write(go[1], "g", 1);
    int st;
    ::waitpid(killer, &st, 0);
    ::usleep(300 * 1000);
    std::printf("kill-pgrp done %s\n", serving().c_str());
    return 0;
  }
  if (what == "kill-pidfd" && argc == 3) {
    // A pidfd of the supervisor, handed in by someone outside: the name of the process is no
    // obstacle, only the kernel's signal scoping is.
    const int pfd = recv_one_fd(argv[2]);
    if (pfd < 0) return report_err("kill-pidfd-recv", errno);
    const int rc = static_cast<int>(::syscall(SYS_pidfd_send_signal, pfd, SIGKILL, nullptr, 0));
    const int err = errno;
    ::usleep(300 * 1000);
    std::printf("kill-pidfd %s %s\n", rc == 0 ? "OK" : ename(err), serving().c_str());
    return 0;
  }
  if (what == "ptrace" && argc == 3) {
    const pid_t pid = static_cast<pid_t>(std::atoi(argv[2]));
    if (::ptrace(PTRACE_SEIZE, pid, nullptr, nullptr) != 0) return report_err("ptrace", errno);
    std::printf("ptrace OK\n");
    ::ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
    return 0;
  }
  if (what == "fibmap" && argc == 3) {
    // The disk block of a file's first block (CAP_SYS_RAWIO): raw-device knowledge.
    const int fd = ::open(argv[2], O_RDONLY | O_CLOEXEC);
    int block = 0;
    if (fd < 0 || ::ioctl(fd, kFibmap, &block) != 0) return report_err("fibmap", errno);
    std::printf("fibmap OK\n");
    return 0;
  }
  if (what == "ioperm") {
    // Raw I/O ports (CAP_SYS_RAWIO); nothing is read or written through them.
    if (::ioperm(0x80, 1, 1) != 0)
      report_err("ioperm", errno);
    else
      std::printf("ioperm OK\n");
    if (::iopl(3) != 0)
      report_err("iopl", errno);
    else
      std::printf("iopl OK\n");
    return 0;
  }
  if (what == "sethostname") {
    // CAP_SYS_ADMIN in the host's UTS namespace; the name is set to what it already is.
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    if (::sethostname(name, std::strlen(name)) != 0) return report_err("sethostname", errno);
    std::printf("sethostname OK\n");
    return 0;
  }
  if (what == "mount" && argc == 3) {
    if (::mount("none", argv[2], "tmpfs", 0, nullptr) != 0) return report_err("mount", errno);
    ::umount(argv[2]);
    std::printf("mount OK\n");
    return 0;
  }
  return usage();
}
