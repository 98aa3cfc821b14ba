/*
 * cm_write_scope: a process that holds an rdma_cm id and also writes a lot to an ordinary fd, for
 * proving that a supervisor traps the rdma_cm command writes but none of the process's other
 * write() calls.
 *
 * Usage: cm_write_scope -a IPV4 [-n WRITES]
 * Opens /dev/infiniband/rdma_cm (rdma_create_event_channel), creates an id and binds it to IPV4
 * (CREATE_ID, BIND_IP/BIND and QUERY travel as write() on that fd), then issues WRITES write()s of
 * one byte to /dev/null, then destroys the id. Prints the rdma_cm fd number and the bound address.
 *
 * The one idea: the number of rdma_cm commands is fixed and the number of plain writes is the
 * parameter, so counting the supervisor's notifications for two values of WRITES tells whether
 * plain writes are trapped (see tests/vm/enforce.sh).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  const char* addr = NULL;
  long writes = 1000;
  int opt;
  while ((opt = getopt(argc, argv, "a:n:")) != -1) {
    if (opt == 'a') {
      addr = optarg;
    } else if (opt == 'n') {
      writes = atol(optarg);
    } else {
      addr = NULL;
      break;
    }
  }
  if (!addr) {
    fprintf(stderr, "usage: cm_write_scope -a IPV4 [-n WRITES]\n");
    return 2;
  }

  struct rdma_event_channel* ch = rdma_create_event_channel();
  if (!ch) {
    perror("cm_write_scope: rdma_create_event_channel (/dev/infiniband/rdma_cm)");
    return 1;
  }
  struct rdma_cm_id* id = NULL;
  if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
    perror("cm_write_scope: rdma_create_id");
    return 1;
  }
  struct sockaddr_in sin = {.sin_family = AF_INET};
  if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
    fprintf(stderr, "cm_write_scope: bad IPv4 address %s\n", addr);
    return 2;
  }
  if (rdma_bind_addr(id, (struct sockaddr*)&sin)) {
    perror("cm_write_scope: rdma_bind_addr");
    return 1;
  }
  printf("cm_write_scope: rdma_cm fd %d, id bound to %s on %s\n", ch->fd, addr,
         id->verbs ? ibv_get_device_name(id->verbs->device) : "(no device)");
  fflush(stdout);

  int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (devnull < 0) {
    perror("cm_write_scope: open /dev/null");
    return 1;
  }
  for (long i = 0; i < writes; ++i) {
    if (write(devnull, "x", 1) != 1) {
      perror("cm_write_scope: write /dev/null");
      return 1;
    }
  }
  close(devnull);
  if (rdma_destroy_id(id)) {
    perror("cm_write_scope: rdma_destroy_id");
    return 1;
  }
  rdma_destroy_event_channel(ch);
  printf("cm_write_scope: %ld plain writes done\n", writes);
  return 0;
}
