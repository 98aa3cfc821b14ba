#!/usr/bin/env bash
# An NCCL all-reduce across two nodes with each task in its node's rail namespace, one task per
# GPU. Submit with: sbatch harness/examples/sbatch-nccl-tests.sh
#SBATCH --job-name=nccl-allreduce
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
#SBATCH --time=00:20:00
set -euo pipefail
# The plugin sets NCCL_IB_HCA (exact ibdev names) and NCCL_SOCKET_IFNAME (the bootstrap
# interface) in every task from the node's plan; anything else is the job's own.
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
# --mpi=pmix: the PMIx server of each node's slurmstepd is relayed into the rail namespace.
# --gdr-debug adds NCCL_DEBUG=INFO with INIT,NET,GRAPH (slower: not for bandwidth numbers);
# --gdr-grant=mlx5_0,mlx5_1 would limit the tasks to those RDMA devices of the node's rails.
srun --mpi=pmix --gdr=auto all_reduce_perf -b 8 -e 4G -f 2 -g 1
