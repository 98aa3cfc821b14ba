#!/usr/bin/env bash
# `gdrproxy cdi generate` on a constructed HGX sysfs tree (16 RoCE NICs, tests/fixtures/sysfs
# variant roce16) and a constructed /proc/driver/nvidia with two GPUs (no NVIDIA driver runs
# here: both are fixtures, named as such). The idea not to miss: the spec must pass the CDI
# schema (tests/oci/cdi_schema.json), and each NIC device must carry its own uverbs node and the
# hooks that move exactly its netdev, so a container given mlx5_3 gets rdma3 and nothing else.
# Usage: cdi_test.sh GDRPROXY SOURCE_DIR
set -uo pipefail
GP=$(realpath "$1")
SRC=$(realpath "$2")
python3 -c 'import jsonschema' 2>/dev/null || { echo "FAIL: python3-jsonschema is missing (scripts/setup.sh installs it)"; exit 1; }
WORK=$(mktemp -d /tmp/gdrproxy-cdi.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$SRC/tests/sysfs/prepare_fixture.sh" hgx-roce16 "$WORK/fx" >/dev/null || fail "fixture"
for g in "0000:0f:00.0 0 GPU-00000000-1111-2222-3333-444444444444" "0000:2d:00.0 1 GPU-55555555-6666-7777-8888-999999999999"; do
  read -r bdf minor uuid <<<"$g"
  mkdir -p "$WORK/fx/proc/driver/nvidia/gpus/$bdf"
  printf 'Model: \t\t NVIDIA H100 80GB HBM3 (constructed)\nIRQ:   \t\t 0\nGPU UUID: \t %s\nDevice Minor: \t %s\nBus Location: \t %s\n' \
    "$uuid" "$minor" "$bdf" >"$WORK/fx/proc/driver/nvidia/gpus/$bdf/information"
done
# The loaded driver's version, and a host filesystem with its libraries (the soname links the
# host's ldconfig made beside them), a CUDA toolkit's stub and another release's leftover, and
# its tools: a constructed one, no NVIDIA driver runs here.
printf 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U22-I3-AF03-09-1)  Thu Nov  6 03:17:08 UTC 2025\n' \
  >"$WORK/fx/proc/driver/nvidia/version"
lib=$WORK/host/usr/lib/x86_64-linux-gnu
mkdir -p "$lib" "$WORK/host/usr/bin" "$WORK/host/usr/local/cuda/lib64/stubs"
for l in libcuda libnvidia-ml libnvidia-ptxjitcompiler; do
  echo "$l" >"$lib/$l.so.580.159.04"
done
ln -s libcuda.so.580.159.04 "$lib/libcuda.so.1"
ln -s libcuda.so.1 "$lib/libcuda.so"
ln -s libnvidia-ml.so.580.159.04 "$lib/libnvidia-ml.so.1"
echo old >"$lib/libcuda.so.570.86.15"
echo stub >"$WORK/host/usr/local/cuda/lib64/stubs/libcuda.so"
echo smi >"$WORK/host/usr/bin/nvidia-smi"
# A directory the host's ld.so.conf names through an include (where cloud images put the driver).
mkdir -p "$WORK/host/etc/ld.so.conf.d" "$WORK/host/usr/local/nvidia/lib64"
echo "include /etc/ld.so.conf.d/*.conf" >"$WORK/host/etc/ld.so.conf"
echo "/usr/local/nvidia/lib64 # the driver" >"$WORK/host/etc/ld.so.conf.d/nvidia.conf"
echo nvvm >"$WORK/host/usr/local/nvidia/lib64/libnvidia-nvvm.so.580.159.04"
ln -s libnvidia-nvvm.so.580.159.04 "$WORK/host/usr/local/nvidia/lib64/libnvidia-nvvm.so.4"
"$GP" cdi generate --sysfs-root "$WORK/fx/sys" --proc-root "$WORK/fx/proc" --driver-root "$WORK/host" \
  --output "$WORK/spec.json" || fail "generate exit $?"
python3 - "$SRC/tests/oci/cdi_schema.json" "$WORK/spec.json" <<'PY' || fail "the spec is not what CDI and this test expect"
import json, sys, jsonschema
schema, spec = (json.load(open(p)) for p in sys.argv[1:])
jsonschema.validate(spec, schema)
devs = {d["name"]: d["containerEdits"] for d in spec["devices"]}
assert spec["kind"] == "gdrproxy.dev/device" and spec["cdiVersion"] == "1.1.0"
nodes = lambda n: sorted(x["path"] for x in devs[n].get("deviceNodes", []))
assert nodes("gpu1") == ["/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia1", "/dev/nvidiactl"], nodes("gpu1")
assert nodes("GPU-55555555-6666-7777-8888-999999999999") == nodes("gpu1")
assert "hooks" not in devs["gpu0"]
# The driver's files of exactly the loaded version, at their host paths and soname links, read-only.
mounts = {m["containerPath"]: m for m in devs["gpu0"]["mounts"]}
L = "/usr/lib/x86_64-linux-gnu/"
assert sorted(mounts) == sorted(["/usr/bin/nvidia-smi", L + "libcuda.so.1", L + "libcuda.so.580.159.04",
                                 L + "libnvidia-ml.so.1", L + "libnvidia-ml.so.580.159.04",
                                 L + "libnvidia-ptxjitcompiler.so.580.159.04",
                                 "/usr/local/nvidia/lib64/libnvidia-nvvm.so.4",
                                 "/usr/local/nvidia/lib64/libnvidia-nvvm.so.580.159.04"]), sorted(mounts)
assert mounts[L + "libcuda.so.1"]["hostPath"].endswith("/host" + L + "libcuda.so.580.159.04")
assert all("ro" in m["options"] and "bind" in m["options"] for m in mounts.values())
assert devs["gpu1"]["mounts"] == devs["gpu0"]["mounts"] and len(devs["all"]["mounts"]) == len(mounts)
assert not any("mounts" in devs[n] for n in devs if n.startswith("mlx5_"))
nics = [n for n in devs if n.startswith("mlx5_")]
assert len(nics) == 16, nics
for n in nics:
    i = int(n.split("_")[1])
    assert nodes(n) == sorted([f"/dev/infiniband/uverbs{i}", "/dev/infiniband/rdma_cm"]), (n, nodes(n))
hooks = {h["hookName"]: h["args"] for h in devs["mlx5_3"]["hooks"]}
assert hooks["createRuntime"][2:5] == ["create-runtime", "--rails", "rdma3"], hooks
assert hooks["poststop"][2:] == ["poststop"], hooks
all_nodes = nodes("all")
assert len(all_nodes) == 16 + 1 + 2 + 3, all_nodes  # uverbs, rdma_cm, two GPUs, ctl + UVM
print(f"CDI spec: {len(devs)} devices, schema-valid; mlx5_3 moves rdma3")
PY
# --no-driver-files: nodes only.
"$GP" cdi generate --sysfs-root "$WORK/fx/sys" --proc-root "$WORK/fx/proc" --driver-root "$WORK/host" \
  --no-driver-files | jq -e '[.devices[].containerEdits.mounts // empty] == []' >/dev/null ||
  fail "--no-driver-files still mounts files"
# A version older than the fields used is refused, naming why.
"$GP" cdi generate --sysfs-root "$WORK/fx/sys" --proc-root "$WORK/fx/proc" --cdi-version 0.2.0 >/dev/null 2>"$WORK/err" &&
  fail "cdiVersion 0.2.0 was accepted"
grep -q "older than 0.3.0" "$WORK/err" || { cat "$WORK/err"; fail "no reason given for refusing 0.2.0"; }
echo "PASS: CDI spec"
