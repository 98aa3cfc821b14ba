// A ping-pong between MPI ranks 0 and 1 over Open MPI's TCP transport, for the Slurm test:
// each rank prints its node, the network interfaces it can see (netlink), their IPv4 addresses
// and what its /sys/class/net lists, then 100 round trips of a 4 KiB message are made and
// checked byte for byte. Exit status 0 only if every byte came back.
#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <mpi.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int by_name(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  char names[1024] = "";
  struct if_nameindex* ifs = if_nameindex();
  for (struct if_nameindex* i = ifs; i && i->if_index; ++i) {
    strncat(names, i->if_name, sizeof names - strlen(names) - 2);
    strncat(names, " ", sizeof names - strlen(names) - 1);
  }
  if (ifs) if_freenameindex(ifs);
  char addrs[1024] = "";
  struct ifaddrs* ifa = NULL;
  if (getifaddrs(&ifa) == 0) {
    for (struct ifaddrs* a = ifa; a; a = a->ifa_next) {
      if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
      char ip[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, &((struct sockaddr_in*)a->ifa_addr)->sin_addr, ip, sizeof ip);
      size_t len = strlen(addrs);
      snprintf(addrs + len, sizeof addrs - len, "%s=%s ", a->ifa_name, ip);
    }
    freeifaddrs(ifa);
  }
  char* sys[64];
  int n_sys = 0;
  DIR* d = opendir("/sys/class/net");
  for (struct dirent* e; d && (e = readdir(d)) && n_sys < 64;) {
    if (e->d_name[0] != '.') sys[n_sys++] = strdup(e->d_name);
  }
  if (d) closedir(d);
  qsort(sys, (size_t)n_sys, sizeof sys[0], by_name);
  char sysnames[1024] = "";
  for (int i = 0; i < n_sys; ++i) {
    size_t len = strlen(sysnames);
    snprintf(sysnames + len, sizeof sysnames - len, "%s ", sys[i]);
    free(sys[i]);
  }
  printf("rank %d of %d on %s sees: %s\n", rank, size, host, names);
  printf("rank %d on %s addresses: %s\n", rank, host, addrs);
  printf("rank %d on %s sysfs: %s\n", rank, host, sysnames);
  fflush(stdout);
  int bad = 0;
  if (size >= 2 && rank < 2) {
    char buf[4096], want[4096];
    for (int round = 0; round < 100; ++round) {
      for (size_t k = 0; k < sizeof want; ++k) want[k] = (char)(k * 7 + round);
      if (rank == 0) {
        MPI_Send(want, sizeof want, MPI_CHAR, 1, round, MPI_COMM_WORLD);
        MPI_Recv(buf, sizeof buf, MPI_CHAR, 1, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        bad += memcmp(buf, want, sizeof buf) != 0;
      } else {
        MPI_Recv(buf, sizeof buf, MPI_CHAR, 0, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, sizeof buf, MPI_CHAR, 0, round, MPI_COMM_WORLD);
      }
    }
    if (rank == 0) printf("pingpong: 100 round trips, %d mismatched\n", bad);
  }
  MPI_Finalize();
  return bad ? 1 : 0;
}
