#!/usr/bin/env bash
# Open MPI's own launcher instead of Slurm: every rank runs under `gdr-harness run` with one
# container per rank, so the ranks of a node share its rails (the first to start moves them, the
# last to leave gives them back), and orted's PMIx server is relayed into the rail namespace.
# Prepare each node first, as root: RDMA_IFACES=... gdr-harness prepare
# Usage: harness/examples/mpirun-nccl-tests.sh HOST1,HOST2 [all_reduce_perf args...]
# (root on the nodes: moving rails needs it; the bootstrap interface carries orted's traffic)
set -euo pipefail
hosts=$1
shift
(($#)) || set -- -b 8 -e 1G -f 2 -g 1
harness=${GDR_HARNESS:-/usr/lib/gdrproxy/gdr-harness}
# -x passes the variables to each rank; the harness reads the rank from OMPI_COMM_WORLD_RANK.
# MPI's own TCP traffic stays on the rails (the only links inside besides lo); NCCL gets
# NCCL_IB_HCA and NCCL_SOCKET_IFNAME from the node's plan.
exec mpirun --host "$hosts" --map-by ppr:1:node --allow-run-as-root \
  -x GDR_HARNESS_CONTAINER=rank -x PATH \
  --mca btl self,tcp --mca btl_tcp_if_include "${RAIL_IFACE:-rail0}" \
  "$harness" run -- all_reduce_perf "$@"
