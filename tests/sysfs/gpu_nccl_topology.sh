#!/usr/bin/env bash
# Real NCCL against a synthetic sysfs, on a GPU machine: NCCL's topology dump for one rank must be
# the same with the host's /sys and with the tree gdrproxy builds from it, mounted at /sys in a
# private mount namespace (the port and CPU mounts of the plan applied, as the OCI hook does).
# Needs root, a GPU, and python3 with torch (NCCL); exits 77 (skipped) otherwise.
# usage: gpu_nccl_topology.sh GDRPROXY [WORKDIR]
set -euo pipefail
GDRPROXY=$(realpath "$1"); WORK=${2:-${TMPDIR:-/tmp}/gdrproxy-nccl-topo}
skip() { echo "SKIP: $*" >&2; exit 77; }
[[ $(id -u) == 0 ]] || skip "needs root"
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 || skip "no NVIDIA GPU"
python3 -c "import torch.distributed" 2>/dev/null || skip "no python3 torch"
rm -rf "$WORK"; mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT

cat > "$WORK/nccl1.py" <<'PY'
import os, torch, torch.distributed as dist
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29517")
dist.init_process_group("nccl", rank=0, world_size=1)
t = torch.ones(1, device="cuda")
dist.all_reduce(t)
torch.cuda.synchronize()
dist.destroy_process_group()
PY

"$GDRPROXY" sysfs snapshot -o "$WORK/host.json"
# Every GPU, every RDMA device and every PCI-backed interface (NCCL's socket transport reads
# class/net too), so both runs may find the same devices.
nics=$(python3 -c "import json,sys; j=json.load(open(sys.argv[1]));
print(','.join([d['name'] for d in j['infiniband']] + [n['name'] for n in j['net']]) or 'none')" \
  "$WORK/host.json")
"$GDRPROXY" sysfs build --snapshot "$WORK/host.json" --out "$WORK/tree" --nics "$nics"
"$GDRPROXY" sysfs verify "$WORK/tree"
"$GDRPROXY" sysfs mount-plan --snapshot "$WORK/host.json" --tree "$WORK/tree" --nics "$nics" \
  > "$WORK/plan.json"

NCCL_TOPO_DUMP_FILE="$WORK/native.xml" timeout 300 python3 "$WORK/nccl1.py"
export GDRPROXY WORK
unshare -m --propagation private bash -euo pipefail -c '
  "$GDRPROXY" sysfs mount --plan "$WORK/plan.json" --at /sys
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=GRAPH NCCL_TOPO_DUMP_FILE="$WORK/synthetic.xml" \
    timeout 300 python3 "$WORK/nccl1.py" > "$WORK/synthetic.log" 2>&1 || { tail -30 "$WORK/synthetic.log"; exit 1; }'
if ! diff -u "$WORK/native.xml" "$WORK/synthetic.xml"; then
  grep -iE "warn|could not|not a pci" "$WORK/synthetic.log" | head -20 >&2
  echo "FAIL: NCCL sees a different topology through the synthetic /sys" >&2
  exit 1
fi
echo "PASS: NCCL topology identical ($(grep -c '<pci ' "$WORK/native.xml") PCI nodes)"
