// A relay of slurmstepd's loopback TCP ports into a task's rail network namespace (see the
// header). The listener process is detached from the task (double fork, so the task's program
// never sees it as a child) and exits when slurmstepd does (a pidfd in its poll set); each
// connection is carried by a process of its own that ends when either side closes.
#define _GNU_SOURCE
#include "loopback_relay.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kMaxPorts = 8, kMaxInodes = 256 };

// The ports of stepd's listening sockets bound to 127.0.0.1 (its fds' socket inodes matched
// against its network namespace's /proc/<pid>/net/tcp).
static int loopback_listen_ports(pid_t stepd, uint16_t* ports) {
  unsigned long inodes[kMaxInodes];
  int n_inodes = 0;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd", (int)stepd);
  DIR* dir = opendir(path);
  if (!dir) return -1;
  for (struct dirent* e; (e = readdir(dir)) && n_inodes < kMaxInodes;) {
    char link[320], target[64];
    snprintf(link, sizeof link, "%s/%s", path, e->d_name);
    ssize_t len = readlink(link, target, sizeof target - 1);
    if (len <= 0) continue;
    target[len] = '\0';
    unsigned long inode = 0;
    if (sscanf(target, "socket:[%lu]", &inode) == 1) inodes[n_inodes++] = inode;
  }
  closedir(dir);
  snprintf(path, sizeof path, "/proc/%d/net/tcp", (int)stepd);
  FILE* tcp = fopen(path, "r");
  if (!tcp) return -1;
  char line[512];
  int n_ports = 0;
  if (!fgets(line, sizeof line, tcp)) line[0] = '\0';  // the header
  while (fgets(line, sizeof line, tcp) && n_ports < kMaxPorts) {
    unsigned addr = 0, port = 0, state = 0;
    unsigned long inode = 0;
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
    if (sscanf(line, " %*d: %8X:%4X %*8X:%*4X %2X %*8X:%*8X %*2X:%*8X %*8X %*u %*d %lu", &addr,
               &port, &state, &inode) != 4)
      continue;
    if (state != 0x0A || addr != htonl(INADDR_LOOPBACK)) continue;  // LISTEN on 127.0.0.1
    for (int i = 0; i < n_inodes; ++i) {
      if (inodes[i] == inode) {
        ports[n_ports++] = (uint16_t)port;
        break;
      }
    }
  }
  fclose(tcp);
  return n_ports;
}

// Standard streams to /dev/null, every other fd but those in keep closed.
static void close_other_fds(const int* keep, size_t n_keep) {
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd < 3 && null >= 0; ++fd) dup2(null, fd);
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  int self = dirfd(dir);
  for (struct dirent* e; (e = readdir(dir));) {
    int fd = atoi(e->d_name);
    if (fd < 3 || fd == self) continue;
    int kept = 0;
    for (size_t i = 0; i < n_keep; ++i) kept |= keep[i] == fd;
    if (!kept) close(fd);
  }
  closedir(dir);
}

static int loopback_socket(uint16_t port, int listening) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int ok = listening ? (bind(s, (struct sockaddr*)&a, sizeof a) == 0 && listen(s, 64) == 0)
                     : connect(s, (struct sockaddr*)&a, sizeof a) == 0;
  if (!ok) {
    int saved = errno;
    close(s);
    errno = saved;
    return -1;
  }
  return s;
}

// Copies bytes both ways between a and b until both directions are closed.
static void pump(int a, int b) {
  char buf[65536];
  int open_ab = 1, open_ba = 1;
  while (open_ab || open_ba) {
    struct pollfd p[2] = {{.fd = open_ab ? a : -1, .events = POLLIN},
                          {.fd = open_ba ? b : -1, .events = POLLIN}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (int i = 0; i < 2; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      int from = i == 0 ? a : b, to = i == 0 ? b : a;
      ssize_t n = read(from, buf, sizeof buf);
      if (n <= 0) {
        shutdown(to, SHUT_WR);
        if (i == 0)
          open_ab = 0;
        else
          open_ba = 0;
        continue;
      }
      for (ssize_t off = 0; off < n;) {
        ssize_t w = write(to, buf + off, (size_t)(n - off));
        if (w <= 0) return;
        off += w;
      }
    }
  }
}

// The listener: accepts in the rail namespace, connects in the node's, until stepd exits.
static void serve(const int* listeners, const uint16_t* ports, int n, int stepd_pidfd) {
  struct sigaction ignore = {.sa_handler = SIG_IGN, .sa_flags = SA_NOCLDWAIT};
  sigaction(SIGCHLD, &ignore, NULL);
  struct pollfd p[kMaxPorts + 1];
  for (;;) {
    for (int i = 0; i < n; ++i) p[i] = (struct pollfd){.fd = listeners[i], .events = POLLIN};
    p[n] = (struct pollfd){.fd = stepd_pidfd, .events = POLLIN};
    if (poll(p, (nfds_t)n + 1, -1) < 0) {
      if (errno == EINTR) continue;
      _exit(1);
    }
    if (p[n].revents) _exit(0);  // slurmstepd is gone: the step is over
    for (int i = 0; i < n; ++i) {
      if (!(p[i].revents & POLLIN)) continue;
      int c = accept4(listeners[i], NULL, NULL, SOCK_CLOEXEC);
      if (c < 0) continue;
      if (fork() == 0) {
        int up = loopback_socket(ports[i], 0);
        if (up >= 0) pump(c, up);
        _exit(0);
      }
      close(c);
    }
  }
}

int relay_step_loopback(pid_t stepd, int rail_ns_fd, char* err, size_t err_size) {
  uint16_t ports[kMaxPorts];
  int n = loopback_listen_ports(stepd, ports);
  if (n < 0) {
    snprintf(err, err_size, "cannot read slurmstepd's sockets (/proc/%d): %s", (int)stepd,
             strerror(errno));
    return -1;
  }
  if (n == 0) return 0;
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) {
    snprintf(err, err_size, "pipe: %s", strerror(errno));
    return -1;
  }
  pid_t child = fork();
  if (child < 0) {
    snprintf(err, err_size, "fork: %s", strerror(errno));
    close(ready[0]);
    close(ready[1]);
    return -1;
  }
  if (child == 0) {
    close(ready[0]);
    setsid();
    if (fork() != 0) _exit(0);
    // The listener. Its listening sockets belong to the rail namespace, its connections to
    // slurmstepd are made from the node's. It keeps none of the task's files: the step's output
    // pipes would keep slurmstepd waiting for it, the namespace's file its mount busy.
    int node_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    int stepd_pidfd = (int)syscall(SYS_pidfd_open, stepd, 0);
    int keep[] = {node_ns, stepd_pidfd, rail_ns_fd, ready[1]};
    close_other_fds(keep, sizeof keep / sizeof keep[0]);
    int listeners[kMaxPorts];
    uint16_t held[kMaxPorts];
    int n_held = 0;
    if (node_ns >= 0 && stepd_pidfd >= 0 && setns(rail_ns_fd, CLONE_NEWNET) == 0) {
      for (int i = 0; i < n; ++i) {
        int s = loopback_socket(ports[i], 1);
        if (s >= 0) {
          listeners[n_held] = s;
          held[n_held++] = ports[i];
        }
      }
      if (setns(node_ns, CLONE_NEWNET) != 0) n_held = 0;
    }
    close(rail_ns_fd);
    close(node_ns);
    char count = (char)n_held;
    if (write(ready[1], &count, 1) != 1) _exit(1);
    close(ready[1]);
    if (n_held == 0) _exit(0);
    serve(listeners, held, n_held, stepd_pidfd);
    _exit(0);
  }
  close(ready[1]);
  waitpid(child, NULL, 0);
  char count = 0;
  struct pollfd p = {.fd = ready[0], .events = POLLIN};
  int got = poll(&p, 1, 5000) == 1 && read(ready[0], &count, 1) == 1;
  close(ready[0]);
  if (!got) {
    snprintf(err, err_size, "the loopback relay did not start");
    return -1;
  }
  return count;
}
