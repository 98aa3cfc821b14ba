#!/bin/bash
# Records the NVIDIA ioctls of a CUDA dma-buf and cuMem fd export, a PyTorch matmul, a 1-GPU
# NCCL all-reduce, nvidia-smi (plain, -q and -pl), an NVML sweep, torch.compile, a CUPTI profile
# and, with two or more GPUs, a 2-rank NCCL all-reduce (LD_PRELOAD shim
# nv_ioctl_capture.c) into DIR/*.nvcap, the fixtures that tests/proxy/nvidia_fixture_test.cc
# decodes in CI.
# Run on the GPU machine: tests/gpu/capture_nvidia_fixtures.sh DIR
set -euo pipefail
out=${1:?usage: $0 OUTPUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
cuda=${CUDA_HOME:-/usr/local/cuda}

gcc -O2 -shared -fPIC -o "$work/nvcap.so" "$here/nv_ioctl_capture.c" -ldl
gcc -O2 -I"$cuda/include" -o "$work/dmabuf" "$here/nv_dmabuf_probe.c" \
  -L"$cuda/lib64/stubs" -lcuda

# One file per workload: the magic once, then every process's records one process after another.
capture() {
  local name=$1; shift
  rm -f "$work/$name".*
  NV_IOCTL_CAPTURE="$work/$name" LD_PRELOAD="$work/nvcap.so" "$@"
  { printf NVIOCAP1; for f in "$work/$name".*; do tail -c +9 "$f"; done; } > "$out/$name.nvcap"
  echo "$name: $(ls "$work/$name".* | wc -l) processes, $(stat -c %s "$out/$name.nvcap") bytes"
}

capture cuda-dmabuf "$work/dmabuf"
capture pytorch-matmul python3 -c '
import torch
a = torch.randn(1024, 1024, device="cuda")
print("matmul sum", float((a @ a).sum()))'
capture nccl-allreduce env MASTER_ADDR=127.0.0.1 MASTER_PORT=29533 python3 -c '
import torch, torch.distributed as dist
dist.init_process_group("nccl", rank=0, world_size=1)
t = torch.ones(1 << 20, device="cuda")
dist.all_reduce(t)
torch.cuda.synchronize()
print("all_reduce", float(t[0]))
dist.destroy_process_group()'

# torch.multiprocessing's spawn re-imports __main__, so the 2-rank job must be a file.
cat > "$work/nccl2.py" <<'PY'
import torch, torch.distributed as dist, torch.multiprocessing as mp
def run(rank):
    dist.init_process_group("nccl", rank=rank, world_size=2)
    torch.cuda.set_device(rank)
    t = torch.ones(1 << 20, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    print("rank", rank, "all_reduce", float(t[0]))
    dist.destroy_process_group()
if __name__ == "__main__":
    mp.spawn(run, nprocs=2)
PY
capture nvidia-smi nvidia-smi
capture nvidia-smi-q nvidia-smi -q
capture nvml-sweep python3 "$here/nvml_sweep.py"
capture torch-compile python3 "$here/workloads.py" compile
capture torch-profile python3 "$here/workloads.py" profile
# As root: the one privileged call (the power limit, set to what it is).
pl=$(nvidia-smi -i 0 --query-gpu=power.limit --format=csv,noheader,nounits | cut -d. -f1)
capture nvidia-smi-pl nvidia-smi -i 0 -pl "$pl"
if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
  capture nccl-allreduce-2gpu env MASTER_ADDR=127.0.0.1 MASTER_PORT=29534 python3 "$work/nccl2.py"
fi
