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
"$GP" cdi generate --sysfs-root "$WORK/fx/sys" --proc-root "$WORK/fx/proc" --output "$WORK/spec.json" ||
  fail "generate exit $?"
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
# A version older than the fields used is refused, naming why.
"$GP" cdi generate --sysfs-root "$WORK/fx/sys" --proc-root "$WORK/fx/proc" --cdi-version 0.2.0 >/dev/null 2>"$WORK/err" &&
  fail "cdiVersion 0.2.0 was accepted"
grep -q "older than 0.3.0" "$WORK/err" || { cat "$WORK/err"; fail "no reason given for refusing 0.2.0"; }
echo "PASS: CDI spec"
