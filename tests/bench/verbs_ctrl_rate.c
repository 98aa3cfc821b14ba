/*
 * verbs_ctrl_rate: control-path rates of a real RDMA device, for comparing a native run with a
 * run under gdrproxy (every one of these verbs is a trapped uverbs ioctl there).
 *
 * Usage: verbs_ctrl_rate -d DEVICE [-t SECONDS]
 * Prints one line per measurement, "NAME RATE_PER_S ITERATIONS":
 *   ctx_open_close   ibv_open_device + ibv_close_device (opens /dev/infiniband/uverbsN,
 * GET_CONTEXT, ASYNC_EVENT alloc, QUERY_DEVICE ...) mr_reg_dereg     ibv_reg_mr + ibv_dereg_mr of
 * one 64 KiB buffer qp_create_destroy ibv_create_qp (RC) + ibv_destroy_qp
 *
 * The one idea: each loop runs for a fixed wall time, not a fixed count, so the program takes the
 * same time natively and proxied and the rates are directly comparable.
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void report(const char* name, long iters, double secs) {
  printf("%-18s %12.1f %8ld\n", name, (double)iters / secs, iters);
  fflush(stdout);
}

int main(int argc, char** argv) {
  const char* name = NULL;
  double secs = 1.0;
  int opt;
  while ((opt = getopt(argc, argv, "d:t:")) != -1) {
    if (opt == 'd') {
      name = optarg;
    } else if (opt == 't') {
      secs = atof(optarg);
    } else {
      fprintf(stderr, "usage: verbs_ctrl_rate -d DEVICE [-t SECONDS]\n");
      return 2;
    }
  }
  if (!name || secs <= 0) {
    fprintf(stderr, "usage: verbs_ctrl_rate -d DEVICE [-t SECONDS]\n");
    return 2;
  }

  int n = 0;
  struct ibv_device** list = ibv_get_device_list(&n);
  struct ibv_device* dev = NULL;
  for (int i = 0; list && i < n; ++i)
    if (strcmp(ibv_get_device_name(list[i]), name) == 0) dev = list[i];
  if (!dev) {
    fprintf(stderr, "verbs_ctrl_rate: no RDMA device %s\n", name);
    return 1;
  }

  long iters = 0;
  double t0 = now_s(), t = t0;
  for (; t - t0 < secs; t = now_s(), ++iters) {
    struct ibv_context* c = ibv_open_device(dev);
    if (!c) {
      perror("verbs_ctrl_rate: ibv_open_device");
      return 1;
    }
    ibv_close_device(c);
  }
  report("ctx_open_close", iters, t - t0);

  struct ibv_context* ctx = ibv_open_device(dev);
  struct ibv_pd* pd = ctx ? ibv_alloc_pd(ctx) : NULL;
  struct ibv_cq* cq = ctx ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
  size_t len = 64 * 1024;
  void* buf = aligned_alloc((size_t)sysconf(_SC_PAGESIZE), len);
  if (!pd || !cq || !buf) {
    fprintf(stderr, "verbs_ctrl_rate: cannot set up PD/CQ/buffer on %s\n", name);
    return 1;
  }
  memset(buf, 0, len);

  iters = 0;
  for (t0 = t = now_s(); t - t0 < secs; t = now_s(), ++iters) {
    struct ibv_mr* mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (!mr || ibv_dereg_mr(mr)) {
      perror("verbs_ctrl_rate: ibv_reg_mr/ibv_dereg_mr");
      return 1;
    }
  }
  report("mr_reg_dereg", iters, t - t0);

  struct ibv_qp_init_attr qa = {
      .send_cq = cq,
      .recv_cq = cq,
      .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
      .qp_type = IBV_QPT_RC,
  };
  iters = 0;
  for (t0 = t = now_s(); t - t0 < secs; t = now_s(), ++iters) {
    struct ibv_qp* qp = ibv_create_qp(pd, &qa);
    if (!qp || ibv_destroy_qp(qp)) {
      perror("verbs_ctrl_rate: ibv_create_qp/ibv_destroy_qp");
      return 1;
    }
  }
  report("qp_create_destroy", iters, t - t0);

  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  free(buf);
  return 0;
}
