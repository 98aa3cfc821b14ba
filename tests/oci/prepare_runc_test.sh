#!/usr/bin/env bash
# `gdrproxy oci prepare` with Debian's runc and `gdrproxy agent`, on stand-in device nodes. The
# idea not to miss: one grant set decides everything the container gets. Prepared with uverbs0
# only, the container's /dev/infiniband holds uverbs0 alone, its uverbs0 ioctls are trapped and
# traced by the agent (which took the grants from the metadata it checked against the bundle),
# and the device cgroup, the containers' kernel guard, refuses at open a node of the uverbs major
# that a root tenant with CAP_MKNOD makes itself (EPERM from the cgroup; without it the open would
# reach the missing driver: ENXIO), while an ordinary node it makes opens. Its /sys is the
# synthetic tree of that grant alone, mounted by runc from the spec: built from a constructed
# HGX host (uverbs0 is mlx5_0 there, netdev rdma0), with mlx5_0's port directory bound live from
# that host and the CPU topology from this one; hwloc inside sees that NIC and no other.
# Usage: prepare_runc_test.sh GDRPROXY ATTACK_CLIENT   (root, runc; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
A=$(realpath "$2")
BENCH=$(realpath "$(dirname "$A")/../bench/ioctl_bench")
# shellcheck source=tests/oci/lib.sh
. "$(dirname "$0")/lib.sh"
oci_enter "$GP" - "$0" "$@"
WORK=$(mktemp -d /tmp/gdrproxy-prepare.XXXXXX)
chmod 755 "$WORK"
AGENT_PID=
trap 'runc --root "$WORK/runc" delete -f prep-1 >/dev/null 2>&1; [[ -n $AGENT_PID ]] && kill -KILL $AGENT_PID 2>/dev/null; rm -rf "$WORK"' EXIT

mkdir -p "$WORK/traces"
# The rule's grants are the ceiling; the bundle's metadata picks within it.
oci_start_agent '{"version": 1, "containers": [
  {"match": {"id": "prep-*"}, "grants": ["uverbs0", "uverbs1", "rdma_cm"],
   "grants_from_metadata": true, "trace": true}]}' --trace-dir "$WORK/traces"

# The host the tree is built from: constructed (this machine has no RDMA device).
python3 "$(dirname "$0")/../fixtures/sysfs/make_hgx_tree.py" --variant roce16 "$WORK/host" ||
  fail "cannot construct the HGX host sysfs"
b=$WORK/bundle
oci_rootfs "$b" "${A%/*}" "${BENCH%/*}"
python3 - "$b/config.json" "$A" "$BENCH" <<'PY'
import json, os, sys
path, attack, bench = sys.argv[1:]
probe = "; ".join(f"{attack} open /dev/infiniband/{d} rdwr syscall | sed s/^/{d}-/" for d in ("uverbs0", "uverbs1"))
script = (f"echo ib: $(ls /dev/infiniband); {probe}; {bench} client 3 /dev/infiniband/uverbs0 >/dev/null; "
          "echo sys-ib: $(ls /sys/class/infiniband); echo sys-net: $(ls /sys/class/net); "
          "echo gid0: $(cat /sys/class/infiniband/mlx5_0/ports/1/gids/0); "
          "echo cpus: $(cat /sys/devices/system/cpu/online); "
          "echo hwloc: $(lstopo-no-graphics --only osdev 2>&1); "
          "touch /sys/x 2>/dev/null; echo sys-write-rc=$?; "
          "mknod /tmp/u1 c 231 1; head -c1 /tmp/u1; echo open-uverbs-rc=$?; "
          "mknod /tmp/n c 1 3 && head -c1 /tmp/n; echo open-null-rc=$?")
caps = ["CAP_MKNOD", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_SETUID", "CAP_SETGID"]
bind = lambda src: {"destination": src, "type": "bind", "source": src, "options": ["rbind", "ro"]}
config = {
  "ociVersion": "1.0.2",
  "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "cwd": "/", "args": ["sh", "-c", script],
              "env": ["PATH=/bin:/usr/bin"], "noNewPrivileges": True,
              "capabilities": {k: caps for k in ("bounding", "effective", "permitted")}},
  "root": {"path": "rootfs", "readonly": True},
  "hostname": "prep",
  "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
             {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
              "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
             {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"]},
             *json.loads(os.environ["OCI_LIB_BINDS"]), bind(os.path.dirname(attack)), bind(os.path.dirname(bench))],
  "linux": {"namespaces": [{"type": t} for t in ("pid", "mount", "ipc", "uts", "network")],
            # A permissive base (every device allowed): only prepare's rules can refuse 231:1.
            "resources": {"devices": [{"allow": True, "access": "rwm"}]}},
}
json.dump(config, open(path, "w"), indent=1)
PY
"$GP" oci prepare "$b" --grant uverbs0 --listener "$SOCK" --sysfs-root "$WORK/host/sys" >"$WORK/prepare.out" 2>&1 ||
  { cat "$WORK/prepare.out"; fail "oci prepare failed"; }
expect "$WORK/prepare.out" "grants \[uverbs0\]"
expect "$WORK/prepare.out" "/sys of 0 GPU\(s\) and 1 NIC\(s\) from $b/gdrproxy-sys \(2 live bind\(s\)\)"
# The runtime mounts the tree at /sys and the live binds over it, in that order.
jq -e --arg t "$b/gdrproxy-sys" '[.mounts[] | select(.destination | startswith("/sys"))] |
  .[0].destination == "/sys" and .[0].source == $t and (.[0].options | index("ro")) != null and
  any(.[]; .destination | endswith("/infiniband/mlx5_0/ports/1")) and
  any(.[]; .destination == "/sys/devices/system/cpu")' "$b/config.json" >/dev/null ||
  { jq .mounts "$b/config.json"; fail "the /sys mounts are not the tree and its live binds"; }
jq -e '.linux.seccomp.listenerMetadata == "gdrproxy-grants=uverbs0"' "$b/config.json" >/dev/null ||
  fail "the grants are not in listenerMetadata"
# Preparing the same bundle again for the same agent and grants (an engine restarting it) changes
# nothing; for other grants it is refused.
cp "$b/config.json" "$WORK/prepared.json"
"$GP" oci prepare "$b" --grant uverbs0 --listener "$SOCK" --sysfs-root "$WORK/host/sys" >"$WORK/again.out" 2>&1 || { cat "$WORK/again.out"; fail "a second prepare failed"; }
expect "$WORK/again.out" "already prepared for .* with grants \[uverbs0\], left as it is"
cmp -s "$b/config.json" "$WORK/prepared.json" || fail "a second prepare changed config.json"
"$GP" oci prepare "$b" --grant uverbs1 --listener "$SOCK" >"$WORK/other.out" 2>&1 && fail "a prepare for other grants was accepted"
expect "$WORK/other.out" "already hands its seccomp listener"

runc --root "$WORK/runc" run --bundle "$b" prep-1 >"$WORK/c.out" 2>&1
rc=$?
[[ $rc == 0 ]] || { cat "$WORK/c.out"; fail "runc exit $rc"; }
expect "$WORK/c.out" "^ib: uverbs0$"
expect "$WORK/c.out" "^uverbs0-open.* OK ioctl="
expect "$WORK/c.out" "^uverbs1-open.* ERR ENOENT"
expect "$WORK/c.out" "/tmp/u1.*Operation not permitted"
expect "$WORK/c.out" "^open-uverbs-rc=1$"
expect "$WORK/c.out" "^open-null-rc=0$"
expect "$WORK/c.out" "^sys-ib: mlx5_0$"
expect "$WORK/c.out" "^sys-net: rdma0$"
gid0=$(cat "$WORK/host/sys/class/infiniband/mlx5_0/ports/1/gids/0")
expect "$WORK/c.out" "^gid0: $gid0$"
expect "$WORK/c.out" "^cpus: $(cat "$WORK/host/sys/devices/system/cpu/online")$"
expect "$WORK/c.out" '^hwloc: .*OpenFabrics "mlx5_0"'
grep "^hwloc:" "$WORK/c.out" | grep -q "mlx5_1\|rdma1" && fail "hwloc in the container sees a NIC it was not granted"
expect "$WORK/c.out" "^sys-write-rc=1$"
for i in $(seq 50); do grep -q "prep-1 ended" "$WORK/agent.log" && break; sleep 0.1; done
grep -q "container prep-1: process .*grants \[uverbs0\]" "$WORK/agent.log" || fail "the agent did not take the grants from the metadata"
jq -e -s 'any(.[]; .device == "uverbs0" and .syscall == "ioctl")' "$WORK/traces/prep-1.jsonl" >/dev/null ||
  { cat "$WORK/traces/prep-1.jsonl"; fail "the container's uverbs0 ioctls are not in its trace"; }
echo "PASS: prepared container: $(tr '\n' ' ' <"$WORK/c.out" | cut -c1-120)"
