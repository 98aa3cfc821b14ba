"""GPU workloads of tests/gpu/: `matmul` (PyTorch) and `allreduce` (NCCL through
torch.distributed, one rank per visible GPU, at most 2), timed by run.sh; `compile` (torch.compile
with its worker processes) and `profile` (torch.profiler through CUPTI, the kernel names it
recorded written to the file PROFILE_KERNELS names), checked by nvidia_tools.sh. Each prints
PASS <name> on success."""
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


def compile_():
    # A fresh cache, so that inductor really compiles (in its worker processes) every time.
    import tempfile
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-")
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "4")

    def f(x, y):
        return torch.nn.functional.gelu(x @ y + 1.0).sum(dim=0)

    x = torch.randn(512, 512, device="cuda")
    got = torch.compile(f)(x, x)
    torch.cuda.synchronize()
    ok = torch.allclose(got, f(x, x), rtol=1e-3, atol=1e-3)
    print("PASS compile" if ok else "FAIL compile: results differ")


def profile():
    from torch.profiler import ProfilerActivity, profile as prof
    a = torch.randn(1024, 1024, device="cuda")
    with prof(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        for _ in range(3):
            b = torch.relu(a @ a)
        torch.cuda.synchronize()
    kernels = sorted({e.name for e in p.events() if e.device_type.name == "CUDA"})
    with open(os.environ.get("PROFILE_KERNELS", "/dev/null"), "w") as f:
        f.write("\n".join(kernels) + "\n")
    print(f"PASS profile kernels={len(kernels)}" if kernels else "FAIL profile: no CUDA kernel")


if __name__ == "__main__":
    {"matmul": matmul, "allreduce": allreduce, "compile": compile_,
     "profile": profile}[sys.argv[1]]()
