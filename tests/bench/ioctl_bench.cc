// Benchmark tool for the cost of one trapped device ioctl.
//   ioctl_bench client N PATH    issue N well-formed RDMA_VERBS_IOCTLs on PATH, print ns per call
//   ioctl_bench nvclient N PATH REQUEST   issue N ioctls REQUEST (an NVIDIA escape such as
//                                RM_FREE, 0xc0104629) with zeroed parameters on PATH
//   ioctl_bench raw -- CMD...    a minimal supervisor written only for this benchmark: traps uverbs
//                                ioctls and answers CONTINUE, nothing else (the floor any seccomp
//                                notify design pays), waiting in poll() before each RECV
//   ioctl_bench raw-blocking -- CMD...   the same with a thread blocked in RECV (no poll), its
//                                hang-up seen by another thread, as gdrproxy's sessions receive
//   ioctl_bench raw-epoll -- CMD...   the same waiting as an event loop does (gdrproxy's sessions
//                                did): epoll_wait, then a poll() of the listener before RECV
//   ioctl_bench raw-look -- CMD...   raw, plus what gdrproxy does per call to learn the fd's device
//                                and the argument: a statx of /proc/<pid>/fd/<n> (by a cached
//                                directory fd) and one process_vm_readv to the end of the page
//   ioctl_bench raw-pre OBJ -- CMD...   raw, plus one lookup in the map that OBJ
//                                (tests/bench/preread/preread.bpf.c) fills at the seccomp
//                                filter's entry, checked against the notification
//   ioctl_bench prog-stats NAME   the BPF programs named NAME that are loaded now: their runs and
//                                the kernel's total time in them, "RUNS NS" (summed; needs
//                                kernel.bpf_stats_enabled=1 for the time; for trap_copy_cost.sh)
// raw-look and raw-pre say at exit how many notifications found no data, so a mode that skipped
// its work cannot pass for a fast one (docs/PERFORMANCE.md, "A copy made at the filter's entry").
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl.h>
#include <seccomp.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "demo/verbs_request.h"
#include "proxy/engine/fd_passing.h"

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif

namespace {

double now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int client(long n, const char* path) {
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    perror(path);
    return 1;
  }
  static ib_uverbs_alloc_pd in{};
  static ib_uverbs_alloc_pd_resp out{};
  gdrproxy::demo::VerbsRequest r(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE);
  r.ptr(UVERBS_ATTR_CORE_IN, &in, sizeof in)
      .ptr(UVERBS_ATTR_CORE_OUT, &out, sizeof out)
      .inline_u64(UVERBS_ATTR_WRITE_CMD, IB_USER_VERBS_CMD_ALLOC_PD, 4);
  std::vector<uint8_t> req = r.bytes();
  for (int i = 0; i < 100; ++i) ioctl(fd, RDMA_VERBS_IOCTL, req.data());  // warm-up
  const double t0 = now_ns();
  for (long i = 0; i < n; ++i) ioctl(fd, RDMA_VERBS_IOCTL, req.data());
  printf("%.1f\n", (now_ns() - t0) / n);
  return 0;
}

int nvclient(long n, const char* path, unsigned long request) {
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    perror(path);
    return 1;
  }
  static uint8_t params[4096];
  for (int i = 0; i < 100; ++i) ioctl(fd, request, params);  // warm-up
  const double t0 = now_ns();
  for (long i = 0; i < n; ++i) ioctl(fd, request, params);
  printf("%.1f\n", (now_ns() - t0) / n);
  return 0;
}

// How the raw supervisor learns a trapped call's device and argument, if at all.
enum class Lookup { kNone, kLook, kPre };

struct PrereadEntry {  // as in tests/bench/preread/preread.bpf.c
  uint64_t request, arg;
  uint32_t fd, rdev, mode, len;
  unsigned char data[512];
};

// The map fds of the pre-read program, loaded and attached from `obj`; false and a line when not.
bool load_preread(const char* obj_path, int& entries, int& watched) {
  bpf_object* obj = bpf_object__open_file(obj_path, nullptr);
  if (!obj || bpf_object__load(obj) != 0) {
    fprintf(stderr, "ioctl_bench: loading %s: %s\n", obj_path, strerror(errno));
    return false;
  }
  if (!bpf_program__attach(bpf_object__find_program_by_name(obj, "copy_ioctl"))) {
    fprintf(stderr, "ioctl_bench: attaching copy_ioctl: %s\n", strerror(errno));
    return false;
  }
  entries = bpf_object__find_map_fd_by_name(obj, "preread");
  watched = bpf_object__find_map_fd_by_name(obj, "watched");
  return true;
}

// Whether the device and argument of `req` could be had: by gdrproxy's own lookups (`dir` is
// the caller's /proc/<pid>/fd), or from the pre-read map.
bool has_data(const seccomp_notif& req, Lookup lookup, int dir, int entries) {
  const uint64_t arg = req.data.args[2];
  if (lookup == Lookup::kLook) {
    char name[24];
    snprintf(name, sizeof name, "%llu", static_cast<unsigned long long>(req.data.args[0]));
    struct statx sx {};
    unsigned char buf[512];
    size_t len = 4096 - (arg & 4095);
    if (len > sizeof buf) len = sizeof buf;
    iovec local{buf, len}, remote{reinterpret_cast<void*>(arg), len};
    return statx(dir, name, AT_STATX_DONT_SYNC, STATX_TYPE, &sx) == 0 && S_ISCHR(sx.stx_mode) &&
           process_vm_readv(req.pid, &local, 1, &remote, 1, 0) == ssize_t(len);
  }
  PrereadEntry e{};
  const uint32_t tid = req.pid;
  return bpf_map_lookup_elem(entries, &tid, &e) == 0 && e.arg == arg && e.fd == req.data.args[0] &&
         (e.request & 0xffffffff) == (req.data.args[1] & 0xffffffff) && S_ISCHR(e.mode) &&
         e.len != 0;
}

int raw_supervisor(char** argv, bool blocking, Lookup lookup = Lookup::kNone,
                   const char* preread_obj = nullptr, bool epoll = false) {
  int entries = -1, watched = -1;
  if (lookup == Lookup::kPre && !load_preread(preread_obj, entries, watched)) return 1;
  int sv[2];
  socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv);
  pid_t pid = fork();
  if (pid == 0) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(ioctl), 1,
                     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xff00, 0x1b00));
    if (seccomp_load(ctx) != 0) _exit(111);
    gdrproxy::proxy::send_fd(sv[1], seccomp_notify_fd(ctx));
    char go;
    if (read(sv[1], &go, 1) != 1) _exit(112);  // watched (raw-pre) before it runs the command
    execvp(argv[0], argv);
    _exit(127);
  }
  // The child's end: closed here, so a child that dies before sending its listener (its filter
  // refused: a task may have one listener in its filter chain) ends the wait below.
  close(sv[1]);
  std::string why;
  const int nfd = gdrproxy::proxy::recv_fd(sv[0], why);
  if (nfd < 0) {
    fprintf(stderr, "raw supervisor: %s\n", why.c_str());
    return 1;
  }
  if (watched >= 0) {
    const uint32_t tgid = static_cast<uint32_t>(pid);
    const uint8_t one = 1;
    bpf_map_update_elem(watched, &tgid, &one, BPF_ANY);
  }
  if (write(sv[0], "g", 1) != 1) return 1;
  ioctl(nfd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, 1UL, 0);  // same synchronous wake-up as gdrproxy
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  const int dir =
      lookup == Lookup::kLook ? open(fd_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  long notifications = 0, without_data = 0;
  const auto answer = [nfd](const seccomp_notif& req) {
    seccomp_notif_resp resp{};
    resp.id = req.id;
    resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    ioctl(nfd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
  };
  if (blocking) {
    // A thread blocked in RECV, no wait before it, as gdrproxy's receivers are. RECV never returns
    // once the last task is gone, so, as there, another thread waits for the listener's hang-up
    // (an epoll of no events: only hang-up and error wake it, never a notification) and then
    // interrupts RECV with a signal until the receiver has seen it.
    static std::atomic<bool> hung_up{false}, done{false};
    struct sigaction sa {};
    sa.sa_handler = [](int) {};
    sigaction(SIGRTMIN + 3, &sa, nullptr);
    std::thread receiver([nfd, answer] {
      while (!hung_up.load(std::memory_order_relaxed)) {
        seccomp_notif req{};
        if (ioctl(nfd, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0) answer(req);
      }
      done = true;
    });
    const int hup = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    epoll_ctl(hup, EPOLL_CTL_ADD, nfd, &ev);
    while (epoll_wait(hup, &ev, 1, -1) != 1) {
    }
    hung_up = true;
    while (!done) {
      pthread_kill(receiver.native_handle(), SIGRTMIN + 3);
      usleep(1000);
    }
    receiver.join();
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  }
  const int ep = epoll ? epoll_create1(EPOLL_CLOEXEC) : -1;
  if (ep >= 0) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    epoll_ctl(ep, EPOLL_CTL_ADD, nfd, &ev);
  }
  for (;;) {
    if (ep >= 0) {
      // As an event loop waits (gdrproxy's sessions did): epoll, then a poll of the one fd.
      epoll_event ev{};
      if (epoll_wait(ep, &ev, 1, -1) < 0) continue;
    }
    pollfd p{nfd, POLLIN, 0};
    if (poll(&p, 1, ep >= 0 ? 0 : -1) < 0) continue;
    if (ep >= 0 && p.revents == 0) continue;
    if (!(p.revents & POLLIN)) break;
    seccomp_notif req{};
    if (ioctl(nfd, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) continue;
    ++notifications;
    if (lookup != Lookup::kNone && !has_data(req, lookup, dir, entries)) ++without_data;
    answer(req);
  }
  int st;
  waitpid(pid, &st, 0);
  if (lookup != Lookup::kNone)
    fprintf(stderr, "%s: %ld notifications, %ld without the data\n",
            lookup == Lookup::kLook ? "raw-look" : "raw-pre", notifications, without_data);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int prog_stats(const char* name) {
  unsigned long long runs = 0, ns = 0;
  for (__u32 id = 0; bpf_prog_get_next_id(id, &id) == 0;) {
    const int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0) continue;  // unloaded meanwhile
    bpf_prog_info info{};
    __u32 len = sizeof info;
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && std::string(info.name) == name) {
      runs += info.run_cnt;
      ns += info.run_time_ns;
    }
    close(fd);
  }
  printf("%llu %llu\n", runs, ns);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 4 && std::string(argv[1]) == "client") return client(atol(argv[2]), argv[3]);
  if (argc >= 3 && std::string(argv[1]) == "prog-stats") return prog_stats(argv[2]);
  if (argc >= 5 && std::string(argv[1]) == "nvclient")
    return nvclient(atol(argv[2]), argv[3], strtoul(argv[4], nullptr, 0));
  if (argc >= 4 && std::string(argv[1]) == "raw" && std::string(argv[2]) == "--")
    return raw_supervisor(argv + 3, false);
  if (argc >= 4 && std::string(argv[1]) == "raw-blocking" && std::string(argv[2]) == "--")
    return raw_supervisor(argv + 3, true);
  if (argc >= 4 && std::string(argv[1]) == "raw-epoll" && std::string(argv[2]) == "--")
    return raw_supervisor(argv + 3, false, Lookup::kNone, nullptr, true);
  if (argc >= 4 && std::string(argv[1]) == "raw-look" && std::string(argv[2]) == "--")
    return raw_supervisor(argv + 3, false, Lookup::kLook);
  if (argc >= 5 && std::string(argv[1]) == "raw-pre" && std::string(argv[3]) == "--")
    return raw_supervisor(argv + 4, false, Lookup::kPre, argv[2]);
  fprintf(stderr,
          "usage: %s client N PATH | nvclient N PATH REQUEST | raw -- CMD... | raw-blocking -- "
          "CMD... | raw-epoll -- CMD... | raw-look -- CMD... | raw-pre OBJ -- CMD... | prog-stats "
          "NAME\n",
          argv[0]);
  return 2;
}
