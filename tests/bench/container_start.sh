#!/usr/bin/env bash
# Container start and end latency that gdrproxy adds: a container running `true`, N each (default 20),
# median wall time, plain runc against the same bundle started through `gdrproxy runtime` (the
# shim edits config.json: profile, /dev nodes, device cgroup, and builds the synthetic /sys of
# the grant, from a constructed HGX host), with the agent serving the listener and two veth rails
# moved in and out by the hooks. Stand-in device nodes; the "host" is a network namespace of its
# own. The bundles are on a tmpfs of the bench's own, as containerd keeps them (/run); with
# BENCH_FS=disk they stay in /tmp, as podman's are on disk. Prints the medians of start (create +
# start) and end (delete), the overhead, and the kernel's share of it: the same two rails moved
# in and out by ip(8) in the same run. A benchmark, not a test.
# JUDGE_HOOK=1 prepares the bundles with --lsm-hook too: the createRuntime hook that asks the agent
# to judge the container from its creation (the agent here has no judge: the hook's own cost, its
# exec and the control socket's round trip).
# Usage: [BENCH_FS=tmpfs|disk] [JUDGE_HOOK=1] tests/bench/container_start.sh [BUILD_DIR] [N]  (root, runc)
set -euo pipefail
build=$(realpath "${1:-build}")
n=${2:-20}
command -v runc >/dev/null || { echo "SKIP: runc is not installed (scripts/setup.sh installs it)"; exit 77; }
if [[ -z ${GDRPROXY_BENCH_INNER:-} ]]; then
  GDRPROXY_BENCH_INNER=1 exec unshare --net "$build/gdrproxy-testkit" standin "$0" "$@"
fi
[[ $(stat -f -c %T /sys/fs/cgroup) == cgroup2fs ]] || mount -t cgroup2 none /sys/fs/cgroup
work=$(mktemp -d /tmp/gdrproxy-start.XXXXXX)
agent_pid=
trap '[[ -n $agent_pid ]] && kill $agent_pid 2>/dev/null; umount "$work/ctr.net" 2>/dev/null
  [[ ${BENCH_FS:-tmpfs} == tmpfs ]] && umount "$work"; rm -rf "$work"' EXIT
# standin runs this in a mount namespace of its own: the tmpfs goes with it.
case ${BENCH_FS:-tmpfs} in
  tmpfs) mount -t tmpfs -o mode=755 tmpfs "$work" ;;
  disk) ;;
  *) echo "BENCH_FS: tmpfs or disk" >&2 && exit 2 ;;
esac
chmod 755 "$work"
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
judge=()
[[ ${JUDGE_HOOK:-0} == 1 ]] && judge=(--lsm-hook --agent-ctl "$work/a.ctl")
ms() { echo $(($(date +%s%N) / 1000000)); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# A container's start is `create` then `start` (the createRuntime hook moves the rails in, the
# process runs); its end is `delete` once the process is gone (the poststop hook gives them back).
# Through gdrproxy every verb goes through the shim, as containerd calls it.
fail() { cat "$work/err" 2>/dev/null; echo "container_start: $*" >&2; exit 1; }
timed() { # FILE CMD...: appends CMD's wall time in ms to $work/FILE.ms
  local f=$1 t0
  shift
  t0=$(ms)
  "$@" >/dev/null 2>"$work/err" || fail "$* failed"
  echo $(($(ms) - t0)) >>"$work/$f.ms"
}
plain_rt() { runc --root "$work/runc" "$@"; }
gdr_rt() { "$build/gdrproxy" runtime --config "$work/runtime.json" -- --root "$work/runc" "$@"; }
up() { # RUNTIME BUNDLE ID
  "$1" create --bundle "$2" "$3" && "$1" start "$3"
}
stopped() { # RUNTIME ID: waits (bounded) for the container's process to be gone
  local j
  for ((j = 0; j < 200; j++)); do
    [[ $("$1" state "$2" 2>/dev/null | jq -r .status) == stopped ]] && return 0
    sleep 0.01
  done
  fail "$2 did not stop"
}
ctr_ns() { nsenter --net="$work/ctr.net" "$@"; }
# Container ids carry this run's pid: a runtime's cgroup and the rail hooks' claims are named
# after the id host-wide, so two runs side by side (a second ctest) must not share one.
for ((i = 0; i < n; i++)); do
  make_bundle "$work/p$i"
  timed plain_start up plain_rt "$work/p$i" "plain-$$-$i"
  stopped plain_rt "plain-$$-$i"
  timed plain_delete plain_rt delete "plain-$$-$i"
  make_bundle "$work/g$i"
  # The rails go in through the hooks prepare writes; the shim then finds them already there.
  "$build/gdrproxy" oci prepare "$work/g$i" --grant uverbs0 --listener "$work/a.sock" --rails rail0,rail1 \
    --allow-plain-rails --no-sysfs "${judge[@]}" >/dev/null
  jq 'del(.linux.seccomp)' "$work/g$i/config.json" >"$work/g$i/c.json" && mv "$work/g$i/c.json" "$work/g$i/config.json"
  timed gdr_start up gdr_rt "$work/g$i" "start-$$-$i"
  grep -q "/sys of 0 GPU(s) and 1 NIC(s)" "$work/err" || fail "the shim built no /sys"
  stopped gdr_rt "start-$$-$i"
  timed gdr_delete gdr_rt delete "start-$$-$i"
  ip -o link show rail1 | grep -q "state UP" || fail "rail1 is not back, up, after delete"
  # The kernel's share: the same two rails moved in and back out by ip(8), no gdrproxy.
  timed moves_in sh -c "ip link set rail0 netns $work/ctr.net && ip link set rail1 netns $work/ctr.net"
  timed moves_out ctr_ns sh -c "ip link set rail0 netns /proc/$$/ns/net && ip link set rail1 netns /proc/$$/ns/net"
  ip link set rail0 up && ip link set rail1 up
done
row() { printf "%-57s %6s ms %6s ms %6s ms\n" "$@"; }
m() { median <"$work/$1.ms"; }
ps=$(m plain_start) pd=$(m plain_delete) gs=$(m gdr_start) gd=$(m gdr_delete) mi=$(m moves_in) mo=$(m moves_out)
echo "medians of $n; start = create + start, end = delete (after exit)"
row "" start end both
row "runc (baseline)" "$ps" "$pd" $((ps + pd))
label="gdrproxy runtime + agent + 2 rails + /sys"
((${#judge[@]})) && label+=" + judge hook"
row "$label" "$gs" "$gd" $((gs + gd))
row "overhead" $((gs - ps)) $((gd - pd)) $((gs + gd - ps - pd))
row "  of it the kernel: 2 rails moved by ip(8)" "$mi" "$mo" $((mi + mo))
row "  gdrproxy's own (overhead - kernel)" $((gs - ps - mi)) $((gd - pd - mo)) $((gs + gd - ps - pd - mi - mo))
awk -v p=$((ps + pd)) -v g=$((gs + gd)) 'BEGIN { printf "ratio (both) %.2f\n", g / p }'
