// What a trapped ioctl's round trip costs a supervisor by how it learns the fd's device and the
// argument, all else bare (CONTINUE only), for the evaluation in docs/PERFORMANCE.md ("A copy made
// at the filter's entry"):
//   preread_bench raw  -- CMD...   nothing (the floor: poll, RECV, SEND)
//   preread_bench look -- CMD...   what gdrproxy does: a statx of /proc/<pid>/fd/<n> (by a cached
//                                  directory fd) and one process_vm_readv to the end of the page
//   preread_bench pre OBJ -- CMD...  one lookup in the map preread.bpf.o (OBJ) fills at the entry
//   of
//                                  the seccomp filter, checked against the notification
// The command's uverbs ioctls (type 0x1b) trap. At exit it says how many notifications found no
// data, so a mode that silently skipped its work cannot pass for a fast one.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "proxy/engine/fd_passing.h"

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif

namespace {

struct PrereadEntry {  // as in preread.bpf.c
  uint64_t request, arg;
  uint32_t fd, rdev, mode, len;
  unsigned char data[512];
};

int usage() {
  std::fprintf(stderr, "usage: preread_bench raw|look -- CMD... | pre OBJ -- CMD...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return usage();
  const std::string mode = argv[1];
  int at = 2, entries = -1, watched = -1;
  if (mode == "pre") {
    bpf_object* obj = bpf_object__open_file(argv[2], nullptr);
    if (!obj || bpf_object__load(obj) != 0) {
      std::fprintf(stderr, "preread_bench: loading %s: %s\n", argv[2], std::strerror(errno));
      return 1;
    }
    if (!bpf_program__attach(bpf_object__find_program_by_name(obj, "copy_ioctl"))) {
      std::fprintf(stderr, "preread_bench: attaching copy_ioctl: %s\n", std::strerror(errno));
      return 1;
    }
    entries = bpf_object__find_map_fd_by_name(obj, "preread");
    watched = bpf_object__find_map_fd_by_name(obj, "watched");
    at = 3;
  } else if (mode != "raw" && mode != "look") {
    return usage();
  }
  if (std::string(argv[at]) != "--" || at + 1 >= argc) return usage();
  char** cmd = argv + at + 1;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return 1;
  const pid_t pid = fork();
  if (pid == 0) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(ioctl), 1,
                     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xff00, 0x1b00));
    if (seccomp_load(ctx) != 0) _exit(111);
    gdrproxy::proxy::send_fd(sv[1], seccomp_notify_fd(ctx));
    char go;
    if (read(sv[1], &go, 1) != 1) _exit(112);  // watched before it runs the command
    execvp(cmd[0], cmd);
    _exit(127);
  }
  std::string why;
  const int nfd = gdrproxy::proxy::recv_fd(sv[0], why);
  if (nfd < 0) {
    std::fprintf(stderr, "preread_bench: %s\n", why.c_str());
    return 1;
  }
  if (watched >= 0) {
    const uint32_t tgid = static_cast<uint32_t>(pid);
    const uint8_t one = 1;
    bpf_map_update_elem(watched, &tgid, &one, BPF_ANY);
  }
  if (write(sv[0], "g", 1) != 1) return 1;
  ioctl(nfd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, 1UL, 0);  // synchronous wake-up, as gdrproxy's bench
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  const int dir = open(fd_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  long notifications = 0, without_data = 0;
  for (;;) {
    pollfd p{nfd, POLLIN, 0};
    if (poll(&p, 1, -1) < 0) continue;
    if (!(p.revents & POLLIN)) break;
    seccomp_notif req{};
    if (ioctl(nfd, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) continue;
    ++notifications;
    const uint64_t arg = req.data.args[2];
    if (mode == "look") {
      char name[24];
      std::snprintf(name, sizeof name, "%llu", static_cast<unsigned long long>(req.data.args[0]));
      struct statx sx {};
      unsigned char buf[512];
      size_t len = 4096 - (arg & 4095);
      if (len > sizeof buf) len = sizeof buf;
      iovec local{buf, len}, remote{reinterpret_cast<void*>(arg), len};
      const bool device =
          statx(dir, name, AT_STATX_DONT_SYNC, STATX_TYPE, &sx) == 0 && S_ISCHR(sx.stx_mode);
      if (!device || process_vm_readv(req.pid, &local, 1, &remote, 1, 0) != ssize_t(len))
        ++without_data;
    } else if (mode == "pre") {
      PrereadEntry e{};
      const uint32_t tid = req.pid;
      if (bpf_map_lookup_elem(entries, &tid, &e) != 0 || e.arg != arg || e.fd != req.data.args[0] ||
          (e.request & 0xffffffff) != (req.data.args[1] & 0xffffffff) || !S_ISCHR(e.mode) ||
          e.len == 0)
        ++without_data;
    }
    seccomp_notif_resp resp{};
    resp.id = req.id;
    resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    ioctl(nfd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  std::fprintf(stderr, "%s: %ld notifications, %ld without the data\n", mode.c_str(), notifications,
               without_data);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
