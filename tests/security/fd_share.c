/* Two processes sharing an fd by pidfd_getfd, as CUDA's fd-based IPC, NCCL's cuMem handle
 * exchange and UCX's GPU handles do between ranks.
 *   fd_share serve FILE        memfd holding "shared-by-<pid>"; writes "<pid> <fd>" to FILE,
 *                              then waits (60 s at most) until killed
 *   fd_share take PID FD       pidfd_open(PID) + pidfd_getfd(FD), prints "took: <content>" or
 *                              "take ERR <errno name>"
 *   fd_share take-pidfd FD PIDFD_FD   pidfd_getfd through an already open pidfd (inherited) */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
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
  fprintf(stderr, "usage: fd_share serve FILE | take PID FD | take-pidfd FD PIDFD_FD\n");
  return 2;
}
