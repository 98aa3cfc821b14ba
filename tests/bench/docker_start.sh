#!/usr/bin/env bash
# Container start latency that gdrproxy adds under Docker: `docker run --rm` of `true` with one
# RDMA node, N each (default 10), alternating, median wall time: `--runtime runc` against
# `--runtime gdrproxy` (daemon.json's entry: dockerd -> containerd -> containerd-shim-runc-v2 ->
# gdrproxy-runtime, which prepares the bundle and builds the synthetic /sys of the grant from a
# constructed HGX host, -> runc; the agent serves the container's listener). No rails: Docker's
# containers get theirs through the hooks as under runc, whose cost tests/bench/container_start.sh
# shows. Stand-in device nodes, Debian's docker.io, an image made offline, no network. A
# benchmark, not a test.
# Usage: tests/bench/docker_start.sh [BUILD_DIR] [N]     (root, docker.io, runc)
set -euo pipefail
build=$(realpath "${1:-build}")
n=${2:-10}
GP=$build/gdrproxy
if ! command -v dockerd >/dev/null || [[ ! -x /usr/bin/docker ]]; then
  echo "SKIP: docker.io is not installed (scripts/setup.sh installs it)"
  exit 77
fi
# shellcheck source=tests/oci/lib.sh
. "$(dirname "$0")/../oci/lib.sh"
OCI_ENTER_TIMEOUT=$((60 + n * 6)) oci_enter "$GP" net "$0" "$@"
WORK=$(mktemp -d /tmp/gdrproxy-dstart.XXXXXX)
AGENT_PID='' DOCKERD_PID=''
trap 'set +e; oci_dockerd_stop; [[ -n $AGENT_PID ]] && kill $AGENT_PID 2>/dev/null; umount -R "$WORK" || echo "docker_start: cannot unmount $WORK" >&2; rm -rf "$WORK"' EXIT
# On tmpfs, as containerd keeps its bundles (/run); the mount goes with standin's namespace.
mount -t tmpfs -o mode=755 tmpfs "$WORK"
ip link set lo up
oci_start_agent '{"version": 1, "containers": [{"match": {"id": "*"}, "grants": ["uverbs0"], "grants_from_metadata": true}]}'
python3 "$(dirname "$0")/../fixtures/sysfs/make_hgx_tree.py" --variant roce16 "$WORK/host"
jq -n --arg s "$SOCK" --arg h "$WORK/host/sys" \
  '{version: 1, runtime: "runc", listener: $s, grants: ["uverbs0"], sysfs: true, sysfs_root: $h}' >"$WORK/runtime.json"
oci_dockerd "$WORK/runtime.json"
oci_rootfs "$WORK/skel"
tar -C "$WORK/skel/rootfs" -cf "$WORK/skel.tar" . && docker import "$WORK/skel.tar" gdrproxy-bench:1 >/dev/null
ms() { echo $(($(date +%s%N) / 1000000)); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timed() { # FILE RUNTIME
  local t0
  t0=$(ms)
  docker run --rm --network none --runtime "$2" --device /dev/infiniband/uverbs0 gdrproxy-bench:1 true \
    >/dev/null 2>"$WORK/err" || { cat "$WORK/err" "$WORK/dockerd.log" | tail -20; echo "docker run --runtime $2 failed" >&2; exit 1; }
  echo $(($(ms) - t0)) >>"$WORK/$1.ms"
}
timed warm runc  # the first run pays for containerd's first shim
for ((i = 0; i < n; i++)); do
  timed runc runc
  timed gdr gdrproxy
done
[[ $(grep -c "ended" "$WORK/agent.log") -ge $n ]] || { echo "the agent did not serve every container" >&2; exit 1; }
plain=$(median <"$WORK/runc.ms") gdr=$(median <"$WORK/gdr.ms")
printf "%-52s %6s ms\n" "docker run --rm --runtime runc true (median of $n)" "$plain" \
  "docker run --rm --runtime gdrproxy true, agent, /sys" "$gdr"
awk -v p="$plain" -v g="$gdr" 'BEGIN { printf "%-52s %6d ms (ratio %.2f)\n", "overhead", g - p, g / p }'
