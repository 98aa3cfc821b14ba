"""GPU workloads timed by tests/gpu/run.sh: `matmul` (PyTorch) and `allreduce` (NCCL through
torch.distributed, one rank per visible GPU, at most 2). Each prints PASS <name> on success."""
import os
import sys

import torch


def matmul():
    a = torch.randn(4096, 4096, device="cuda")
    b = a @ a
    torch.cuda.synchronize()
    print("PASS matmul", float(b[0, 0]) == float(b[0, 0]))


def _rank(rank, world, port):
    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    t = torch.ones(1 << 24, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    assert float(t[0]) == world, float(t[0])
    dist.destroy_process_group()


def allreduce():
    world = min(torch.cuda.device_count(), 2)
    port = 29500 + os.getpid() % 1000
    if world == 1:
        _rank(0, 1, port)
    else:
        torch.multiprocessing.spawn(_rank, args=(world, port), nprocs=world)
    print(f"PASS allreduce ranks={world}")


if __name__ == "__main__":
    {"matmul": matmul, "allreduce": allreduce}[sys.argv[1]]()
