#!/usr/bin/env bash
# Debian's podman 4.3 with `--device gdrproxy.dev/device=mlx5_1` from `gdrproxy cdi generate`
# (cdiVersion 0.5.0, the newest that podman's CDI library reads) and `--runtime` the
# gdrproxy-runtime link (the shim, which prepares the bundle podman made and execs runc), with
# `gdrproxy agent` serving the listener. The idea not to miss: podman applies the CDI edits
# (device nodes, rail hooks), the shim derives everything else from those nodes, so the container
# gets uverbs1 and rdma_cm alone in /dev, mlx5_1 alone in /sys, its rail rdma1 moved in, and its
# uverbs1 ioctls trapped and traced, while uverbs0 does not exist for it; after it exits the
# host's addresses and routes read back as before. Test-rig parts, named as such: the host's
# sysfs is a constructed HGX node's (uverbsN is mlx5_N there), the device nodes are stand-ins,
# the rail is a veth (cdi generate --allow-plain-rails), and the container's network namespace
# is a pinned one (`--network ns:PATH`; a veth dies with its namespace). This machine's root has
# no CAP_SYS_RESOURCE, so crun cannot load its device program and podman runs runc, and podman's
# default rlimits are above this machine's hard limits, so they are given explicitly.
# Usage: podman_test.sh GDRPROXY ATTACK_CLIENT SOURCE_DIR   (root, podman, runc; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
A=$(realpath "$2")
SRC=$(realpath "$3")
BENCH=$(realpath "$(dirname "$A")/../bench/ioctl_bench")
command -v podman >/dev/null || { echo "SKIP: podman is not installed (scripts/setup.sh installs it)"; exit 77; }
# shellcheck source=tests/oci/lib.sh
. "$(dirname "$0")/lib.sh"
oci_enter "$GP" net "$0" "$@"
WORK=$(mktemp -d /tmp/gdrproxy-podman.XXXXXX)
chmod 755 "$WORK"
AGENT_PID=
IMAGE=localhost/gdrproxy-test-skeleton:$$
trap 'podman rmi -f "$IMAGE" >/dev/null 2>&1; [[ -n $AGENT_PID ]] && kill -KILL $AGENT_PID 2>/dev/null; umount /run/cdi "$WORK/ctr.net" 2>/dev/null; rm -rf "$WORK"' EXIT

# The rail and the container's pinned network namespace.
ip link set lo up
ip link add rdma1 type veth peer name rdma1p
ip addr add 198.51.100.21/24 dev rdma1
ip link set rdma1 up
ip link set rdma1p up
snapshot() { ip -4 addr show; ip -4 route show table all | sort; }
snapshot >"$WORK/before.txt"
touch "$WORK/ctr.net"
unshare --net="$WORK/ctr.net" true || fail "cannot pin a network namespace"

# The CDI spec, where podman looks for it (this mount namespace only).
"$SRC/tests/sysfs/prepare_fixture.sh" hgx-roce16 "$WORK/fx" >/dev/null || fail "fixture"
mkdir -p "$WORK/cdi" /run/cdi
mount --bind "$WORK/cdi" /run/cdi || fail "cannot mount the CDI spec directory"
"$GP" cdi generate --sysfs-root "$WORK/fx/sys" --proc-root "$WORK/fx/proc" --cdi-version 0.5.0 \
  --allow-plain-rails --output /run/cdi/gdrproxy.json || fail "cdi generate exit $?"

mkdir -p "$WORK/traces"
oci_start_agent '{"version": 1, "containers": [{"match": {"id": "*"}, "grants": ["uverbs0", "uverbs1", "rdma_cm"],
  "grants_from_metadata": true, "trace": true}]}' --trace-dir "$WORK/traces"
jq -n --arg s "$SOCK" --arg h "$WORK/fx/sys" \
  '{version: 1, runtime: "runc", listener: $s, grants: ["uverbs*", "rdma_cm"], sysfs: true, sysfs_root: $h}' \
  >"$WORK/runtime.json"
ln -s "$GP" "$WORK/gdrproxy-runtime"

# An image of busybox and mount points; the host's libraries come in read-only for the test's own
# dynamically linked clients.
oci_rootfs "$WORK/skel" /run /var
tar -C "$WORK/skel/rootfs" -cf "$WORK/skel.tar" . && podman import --quiet "$WORK/skel.tar" "$IMAGE" >/dev/null ||
  fail "podman import failed"

adir=$(dirname "$A") bdir=$(dirname "$BENCH")
script="echo ib: \$(ls /dev/infiniband); echo sys-ib: \$(ls /sys/class/infiniband);
  ip -o -4 addr show; $A open /dev/infiniband/uverbs1 rdwr syscall; $A open /dev/infiniband/uverbs0 rdwr syscall;
  $BENCH client 3 /dev/infiniband/uverbs1 >/dev/null"
# podman passes no environment to the runtime: the shim's config comes as a runtime flag.
timeout 90 podman --cgroup-manager cgroupfs --runtime "$WORK/gdrproxy-runtime" \
  --runtime-flag "gdrproxy-config=$WORK/runtime.json" run --rm --network "ns:$WORK/ctr.net" --pids-limit=-1 \
  --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --device gdrproxy.dev/device=mlx5_1 \
  -v /usr/lib:/usr/lib:ro -v /usr/lib64:/usr/lib64:ro -v "$adir:$adir:ro" -v "$bdir:$bdir:ro" "$IMAGE" sh -c "$script" >"$WORK/c.out" 2>&1
rc=$?
[[ $rc == 0 ]] || { cat "$WORK/c.out"; fail "podman run exit $rc"; }
expect "$WORK/c.out" "^ib: rdma_cm uverbs1$"
expect "$WORK/c.out" "^sys-ib: mlx5_1$"
expect "$WORK/c.out" "rdma1 +inet 198\.51\.100\.21/24"
expect "$WORK/c.out" "^open-syscall OK ioctl="
expect "$WORK/c.out" "^open-syscall ERR ENOENT$"
expect "$WORK/agent.log" "grants \[uverbs1,rdma_cm\]"
trace=$(ls "$WORK"/traces/*.jsonl 2>/dev/null | head -1)
[[ -n $trace ]] && jq -e -s 'any(.[]; .device == "uverbs1" and .syscall == "ioctl")' "$trace" >/dev/null ||
  { cat "$trace" 2>/dev/null; fail "the container's uverbs1 ioctls are not in its trace"; }
# poststop gave the rail back.
for i in $(seq 50); do ip link show rdma1 >/dev/null 2>&1 && break; sleep 0.1; done
snapshot >"$WORK/after.txt"
diff -u "$WORK/before.txt" "$WORK/after.txt" || fail "the host's addresses or routes differ after the container"
echo "PASS: podman with the CDI device and the runtime shim: $(grep -c . "$WORK/c.out") lines, rail back"
