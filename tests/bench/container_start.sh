#!/usr/bin/env bash
# Container start latency that gdrproxy adds: `runc run` of `true`, N runs each (default 20),
# median wall time, plain runc against the same bundle started through `gdrproxy runtime` (the
# shim edits config.json: profile, /dev nodes, device cgroup, and builds the synthetic /sys of
# the grant, from a constructed HGX host), with the agent serving the listener and two veth rails
# moved in and out by the hooks. Stand-in device nodes; the "host" is a network namespace of its
# own. Prints both medians, the overhead and the ratio. A
# benchmark, not a test.
# Usage: tests/bench/container_start.sh [BUILD_DIR] [N]     (root, runc)
set -euo pipefail
build=$(realpath "${1:-build}")
n=${2:-20}
if [[ -z ${GDRPROXY_BENCH_INNER:-} ]]; then
  GDRPROXY_BENCH_INNER=1 exec unshare --net "$build/gdrproxy" standin "$0" "$@"
fi
[[ $(stat -f -c %T /sys/fs/cgroup) == cgroup2fs ]] || mount -t cgroup2 none /sys/fs/cgroup
work=$(mktemp -d /tmp/gdrproxy-start.XXXXXX)
chmod 755 "$work"
agent_pid=
trap '[[ -n $agent_pid ]] && kill $agent_pid 2>/dev/null; umount "$work/ctr.net" 2>/dev/null; rm -rf "$work"' EXIT
# shellcheck source=tests/oci/lib.sh
. "$(dirname "$0")/../oci/lib.sh"
oci_veth_rails
touch "$work/ctr.net"
unshare --net="$work/ctr.net" true
echo '{"version": 1, "containers": [{"match": {"id": "start-*"}, "grants": ["uverbs0"], "grants_from_metadata": true}]}' >"$work/agent.json"
"$build/gdrproxy" agent -q --socket "$work/a.sock" --ctl-socket "$work/a.ctl" --config "$work/agent.json" &
agent_pid=$!
for i in $(seq 100); do [[ -S $work/a.sock ]] && break; sleep 0.05; done
python3 "$(dirname "$0")/../fixtures/sysfs/make_hgx_tree.py" --variant roce16 "$work/host"
jq -n --arg s "$work/a.sock" --arg h "$work/host/sys" \
  '{version: 1, runtime: "runc", listener: $s, grants: ["uverbs0"], sysfs: true, sysfs_root: $h}' >"$work/runtime.json"
make_bundle() {
  local b=$1
  oci_rootfs "$b"
  python3 - "$b/config.json" "$work/ctr.net" "$(stat -c '%t %T' /dev/infiniband/uverbs0)" <<'PY'
import json, os, sys
path, netns, mm = sys.argv[1:]
major, minor = (int(x, 16) for x in mm.split())
bind = lambda src: {"destination": src, "type": "bind", "source": src, "options": ["rbind", "ro"]}
json.dump({"ociVersion": "1.0.2",
  "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "cwd": "/", "args": ["true"],
              "env": ["PATH=/bin:/usr/bin"], "noNewPrivileges": True},
  "root": {"path": "rootfs", "readonly": True},
  "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
             {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]},
             *json.loads(os.environ["OCI_LIB_BINDS"])],
  "linux": {"namespaces": [{"type": t} for t in ("pid", "mount", "ipc", "uts")] + [{"type": "network", "path": netns}],
            "devices": [{"path": "/dev/infiniband/uverbs0", "type": "c", "major": major, "minor": minor}],
            "resources": {"devices": [{"allow": False, "access": "rwm"}]}}}, open(path, "w"))
PY
}
ms() { echo $(($(date +%s%N) / 1000000)); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for ((i = 0; i < n; i++)); do
  make_bundle "$work/p$i"
  t0=$(ms); runc --root "$work/runc" run --bundle "$work/p$i" "plain-$i" >/dev/null; echo $(($(ms) - t0)) >>"$work/plain.ms"
  make_bundle "$work/g$i"
  # The rails go in through the hooks prepare writes; the shim then finds them already there.
  "$build/gdrproxy" oci prepare "$work/g$i" --grant uverbs0 --listener "$work/a.sock" --rails rail0,rail1 \
    --allow-plain-rails --no-sysfs >/dev/null
  jq 'del(.linux.seccomp)' "$work/g$i/config.json" >"$work/g$i/c.json" && mv "$work/g$i/c.json" "$work/g$i/config.json"
  t0=$(ms)
  "$build/gdrproxy" runtime --config "$work/runtime.json" -- --root "$work/runc" run \
    --bundle "$work/g$i" "start-$i" >/dev/null 2>"$work/err" || { cat "$work/err"; exit 1; }
  echo $(($(ms) - t0)) >>"$work/gdr.ms"
  grep -q "/sys of 0 GPU(s) and 1 NIC(s)" "$work/err" || { cat "$work/err"; echo "the shim built no /sys"; exit 1; }
done
plain=$(median <"$work/plain.ms")
gdr=$(median <"$work/gdr.ms")
printf "%-34s %8s\n" "runc run true (median of $n)" "${plain} ms"
printf "%-34s %8s\n" "gdrproxy runtime + agent + 2 rails + /sys" "${gdr} ms"
awk -v p="$plain" -v g="$gdr" 'BEGIN { printf "%-34s %8d ms (ratio %.2f)\n", "overhead", g - p, g / p }'
