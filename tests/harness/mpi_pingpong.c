// A ping-pong between MPI ranks 0 and 1 over Open MPI's TCP transport, for the Slurm test:
// each rank prints its node and the network interfaces it can see, then 100 round trips of a
// 4 KiB message are made and checked byte for byte. Exit status 0 only if every byte came back.
#include <mpi.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
  printf("rank %d of %d on %s sees: %s\n", rank, size, host, names);
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
