/*
 * async_event: proves that an RDMA asynchronous event reaches a process that is blocked in
 * ibv_get_async_event(), on a real device (Soft-RoCE in the test VM), natively or under gdrproxy.
 *
 * Usage: async_event -d DEVICE [-e PORT_ERR|PORT_ACTIVE] [-t SECONDS] -- TRIGGER [ARGS...]
 *
 * The program opens DEVICE, forks TRIGGER after a short delay and then blocks in
 * ibv_get_async_event(). TRIGGER is expected to cause the event, e.g. `ip link set NETDEV down`
 * for the netdev under an rxe device: rxe reports the port change as IBV_EVENT_PORT_ERR (and
 * IBV_EVENT_PORT_ACTIVE on the way back up). Exit status 0 only when the expected event arrived
 * for port 1 while we were blocked and TRIGGER succeeded.
 *
 * The one idea: the event source is outside the process (a netdev state change in the kernel), so
 * the event travels through the async event fd that the kernel created for this context; nothing
 * in this process can fake it. SIGALRM bounds the wait.
 */
#include <infiniband/verbs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "async_event: timed out waiting for the event\n";
  if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
    /* nothing more to do: we exit either way */
  }
  _exit(3);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct ibv_context* open_by_name(const char* name) {
  int n = 0;
  struct ibv_device** list = ibv_get_device_list(&n);
  if (!list) {
    perror("async_event: ibv_get_device_list");
    return NULL;
  }
  struct ibv_context* ctx = NULL;
  for (int i = 0; i < n; ++i) {
    if (strcmp(ibv_get_device_name(list[i]), name) == 0) {
      ctx = ibv_open_device(list[i]);
      if (!ctx) perror("async_event: ibv_open_device");
      break;
    }
  }
  if (!ctx) fprintf(stderr, "async_event: cannot open RDMA device %s\n", name);
  ibv_free_device_list(list);
  return ctx;
}

int main(int argc, char** argv) {
  const char* dev = NULL;
  enum ibv_event_type want = IBV_EVENT_PORT_ERR;
  unsigned timeout = 20;
  int opt;
  while ((opt = getopt(argc, argv, "d:e:t:")) != -1) {
    switch (opt) {
      case 'd':
        dev = optarg;
        break;
      case 'e':
        if (strcmp(optarg, "PORT_ERR") == 0) {
          want = IBV_EVENT_PORT_ERR;
        } else if (strcmp(optarg, "PORT_ACTIVE") == 0) {
          want = IBV_EVENT_PORT_ACTIVE;
        } else {
          fprintf(stderr, "async_event: unknown event %s\n", optarg);
          return 2;
        }
        break;
      case 't':
        timeout = (unsigned)atoi(optarg);
        break;
      default:
        goto usage;
    }
  }
  if (!dev || optind >= argc) goto usage;

  struct ibv_context* ctx = open_by_name(dev);
  if (!ctx) return 1;
  struct ibv_port_attr port;
  if (ibv_query_port(ctx, 1, &port)) {
    fprintf(stderr, "async_event: ibv_query_port(%s, 1) failed\n", dev);
    return 1;
  }
  printf("async_event: %s port 1 is %s before the trigger\n", dev, ibv_port_state_str(port.state));

  /* The trigger runs after a delay so that it acts while we are blocked below. */
  fflush(stdout);
  pid_t child = fork();
  if (child < 0) {
    perror("async_event: fork");
    return 1;
  }
  if (child == 0) {
    usleep(300 * 1000);
    execvp(argv[optind], &argv[optind]);
    perror("async_event: exec trigger");
    _exit(127);
  }

  signal(SIGALRM, on_alarm);
  alarm(timeout);
  double t0 = now_s();
  struct ibv_async_event ev;
  if (ibv_get_async_event(ctx, &ev)) {
    perror("async_event: ibv_get_async_event");
    return 1;
  }
  double waited = now_s() - t0;
  alarm(0);
  enum ibv_event_type got = ev.event_type;
  int port_num =
      (got == IBV_EVENT_PORT_ERR || got == IBV_EVENT_PORT_ACTIVE) ? ev.element.port_num : 0;
  ibv_ack_async_event(&ev);
  printf("async_event: got %s (port %d) on %s after blocking %.3f s\n", ibv_event_type_str(got),
         port_num, dev, waited);

  int st = 0;
  if (waitpid(child, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "async_event: trigger %s failed (status 0x%x)\n", argv[optind], st);
    return 1;
  }
  ibv_close_device(ctx);
  if (got != want || port_num != 1) {
    fprintf(stderr, "async_event: expected %s on port 1\n", ibv_event_type_str(want));
    return 1;
  }
  return 0;

usage:
  fprintf(
      stderr,
      "usage: async_event -d DEVICE [-e PORT_ERR|PORT_ACTIVE] [-t SECONDS] -- TRIGGER [ARGS...]\n");
  return 2;
}
