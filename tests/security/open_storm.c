/* Opens PATH N times while a 20-microsecond interval timer interrupts it with a restarting
 * signal handler (as Go's SIGURG preemption and profiling timers do), and prints how many opens
 * succeeded: "opened N". Under gdrproxy each brokered open must be handled once, however often
 * the caller is interrupted while its call is being decided.
 * Usage: open_storm PATH N */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static volatile sig_atomic_t ticks;
static void on_alarm(int sig) {
  (void)sig;
  ++ticks;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: open_storm PATH N\n");
    return 2;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 20}, {0, 20}};
  setitimer(ITIMER_REAL, &it, NULL);
  const int n = atoi(argv[2]);
  int opened = 0;
  for (int i = 0; i < n; ++i) {
    const int fd = open(argv[1], O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
      ++opened;
      close(fd);
    }
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  printf("opened %d (%d signals)\n", opened, (int)ticks);
  return opened == n ? 0 : 1;
}
