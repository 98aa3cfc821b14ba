/* Two processes sharing an fd by pidfd_getfd, as CUDA's fd-based IPC, NCCL's cuMem handle
 * exchange and UCX's GPU handles do between ranks.
 *   fd_share serve FILE        memfd holding "shared-by-<pid>"; writes "<pid> <fd>" to FILE,
 *                              then waits (60 s at most) until killed
 *   fd_share take PID FD       pidfd_open(PID) + pidfd_getfd(FD), prints "took: <content>" or
 *                              "take ERR <errno name>"
 *   fd_share take-pidfd FD PIDFD_FD   pidfd_getfd through an already open pidfd (inherited)
 *   fd_share sweep STOPFILE    a hostile tenant: until STOPFILE exists (120 s at most), takes fds
 *                              0..31 of every other process it sees, again and again while the
 *                              process is young (1 s: a runtime's exec helper lives for
 *                              milliseconds), each time with the process stopped (SIGSTOP); prints
 * "took pid=P comm=C fd=N -> LINK" once per (pid, fd) and, at the end, "sweep: T taken, R refused
 * (EPERM)" */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int take(int pidfd, int fd) {
  if (pidfd < 0) {
    printf("take ERR %s\n", strerrorname_np(errno));
    return 1;
  }
  int got = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
  if (got < 0) {
    printf("take ERR %s\n", strerrorname_np(errno));
    return 1;
  }
  char buf[64] = {0};
  if (pread(got, buf, sizeof buf - 1, 0) < 0) {
    printf("take ERR read %s\n", strerrorname_np(errno));
    return 1;
  }
  printf("took: %s\n", buf);
  return 0;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// Takes fds 0..kFds-1 of `pid` through `pidfd`, printing each (pid, fd) the first time.
enum { kMaxSeen = 8192, kFds = 32 };
static int printed[kMaxSeen][2];
static int n_printed;
static long taken, refused;

static void take_all(int pid, int pidfd) {
  for (int fd = 0; fd < kFds; ++fd) {
    const int got = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
    if (got < 0) {
      refused += errno == EPERM;
      continue;
    }
    ++taken;
    int j = 0;
    while (j < n_printed && (printed[j][0] != pid || printed[j][1] != fd)) ++j;
    if (j == n_printed && n_printed < kMaxSeen) {
      char path[64], link[256] = "?", comm[64] = "?";
      snprintf(path, sizeof path, "/proc/self/fd/%d", got);
      const ssize_t n = readlink(path, link, sizeof link - 1);
      if (n > 0) link[n] = 0;
      snprintf(path, sizeof path, "/proc/%d/comm", pid);
      FILE* f = fopen(path, "r");
      if (f) {
        if (fgets(comm, sizeof comm, f)) comm[strcspn(comm, "\n")] = 0;
        fclose(f);
      }
      printf("took pid=%d comm=%s fd=%d -> %s\n", pid, comm, fd, link);
      printed[n_printed][0] = pid;
      printed[n_printed++][1] = fd;
    }
    close(got);
  }
}

// Pids of a pid namespace come in order: the next few are watched with pidfd_open (never
// trapped), so a process is caught within microseconds of its birth; /proc is read now and then
// for the rest. Each young process (1 s) is stopped, swept and let go on, again and again.
static int sweep(const char* stop) {
  static struct {
    int pid, pidfd;
    double first;
  } young[kMaxSeen];
  int n_young = 0, max_pid = 0;
  const double start = now();
  const int self = getpid();
  for (long round = 0; access(stop, F_OK) != 0 && now() - start < 120; ++round) {
    int found[64], n_found = 0;
    for (int next = max_pid + 1; next <= max_pid + 4; ++next) found[n_found++] = next;
    DIR* d = round % 64 == 0 ? opendir("/proc") : NULL;
    for (struct dirent* e; d && (e = readdir(d)) && n_found < 64;)
      found[n_found++] = atoi(e->d_name);
    if (d) closedir(d);
    for (int k = 0; k < n_found; ++k) {
      const int pid = found[k];
      if (pid <= 0 || pid == self) continue;
      int i = 0;
      while (i < n_young && young[i].pid != pid) ++i;
      if (i < n_young || n_young == kMaxSeen) continue;
      const int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
      if (pidfd < 0) continue;
      if (pid > max_pid) max_pid = pid;
      young[n_young].pid = pid;
      young[n_young].pidfd = pidfd;
      young[n_young++].first = now();
    }
    for (int i = 0; i < n_young; ++i)
      if (young[i].pidfd >= 0) {
        // Old, or gone (a dead process's pidfd cannot be signalled): never swept again.
        if (now() - young[i].first > 1.0 ||
            syscall(SYS_pidfd_send_signal, young[i].pidfd, SIGSTOP, NULL, 0) != 0) {
          close(young[i].pidfd);
          young[i].pidfd = -1;  // stays in the list
          continue;
        }
        // Stopped above (same uid, CAP_KILL: the tenant may stop any process of its container, a
        // runtime's helper too): its fds are taken at leisure before it is let go on.
        take_all(young[i].pid, young[i].pidfd);
        syscall(SYS_pidfd_send_signal, young[i].pidfd, SIGCONT, NULL, 0);
      }
  }
  printf("sweep: %ld taken, %ld refused (EPERM)\n", taken, refused);
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc == 3 && strcmp(argv[1], "serve") == 0) {
    int fd = memfd_create("fd_share", 0);
    dprintf(fd, "shared-by-%d", getpid());
    FILE* f = fopen(argv[2], "w");
    if (!f) return 1;
    fprintf(f, "%d %d\n", getpid(), fd);
    fclose(f);
    sleep(60);
    return 0;
  }
  if (argc == 4 && strcmp(argv[1], "take") == 0)
    return take((int)syscall(SYS_pidfd_open, atoi(argv[2]), 0), atoi(argv[3]));
  if (argc == 4 && strcmp(argv[1], "take-pidfd") == 0) return take(atoi(argv[3]), atoi(argv[2]));
  if (argc == 3 && strcmp(argv[1], "sweep") == 0) return sweep(argv[2]);
  fprintf(stderr,
          "usage: fd_share serve FILE | take PID FD | take-pidfd FD PIDFD_FD | sweep STOPFILE\n");
  return 2;
}
