#!/usr/bin/env bash
# `crun exec` and `podman exec` into a container the agent serves. The idea not to miss: crun 1.8
# names no process when it hands over an exec'd process's listener ("pid": 0), so the agent binds
# that listener to the first caller it receives on it, after checking that caller is in the
# container's pid namespace and cgroup; from then on the exec'd process gets the container's
# grants, and is refused the others, exactly as the container's init is.
# Part 1: Debian's crun, a hand-written bundle whose profile is `gdrproxy oci seccomp`'s, both
# stand-in uverbs nodes in the container, the agent granting uverbs0 alone (the other is refused by
# the agent, EACCES). Part 2: Debian's podman, runtime the gdrproxy-runtime shim in front of crun
# (through a wrapper that adds MEMLOCK_PRELOAD where root lacks CAP_SYS_RESOURCE; see
# runtime_shim_test.sh), granted uverbs0; `podman exec` opens it and its ioctls are served and
# traced as the container's.
# Usage: exec_unnamed_test.sh GDRPROXY ATTACK_CLIENT MEMLOCK_PRELOAD   (root, crun; podman for
#   part 2; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
A=$(realpath "$2")
PRELOAD=$(realpath "$3")
BENCH=$(realpath "$(dirname "$A")/../bench/ioctl_bench")
command -v crun >/dev/null || { echo "SKIP: crun is not installed (scripts/setup.sh installs it)"; exit 77; }
# shellcheck source=tests/oci/lib.sh
. "$(dirname "$0")/lib.sh"
OCI_ENTER_TIMEOUT=170 oci_enter "$GP" - "$0" "$@"
WORK=$(mktemp -d /tmp/gdrproxy-exec.XXXXXX)
chmod 755 "$WORK"
AGENT_PID= PODMAN_ID=
IMAGE=localhost/gdrproxy-test-exec:$$
cleanup() {
  crun --root "$WORK/crun" delete -f exec-c1 >/dev/null 2>&1
  if [[ -n $PODMAN_ID ]]; then
    timeout 30 podman --cgroup-manager cgroupfs --runtime "$WORK/gdrproxy-runtime" \
      --runtime-flag "gdrproxy-config=$WORK/runtime.json" rm -f -t 0 "$PODMAN_ID" >/dev/null 2>&1
  fi
  command -v podman >/dev/null && podman rmi -f "$IMAGE" >/dev/null 2>&1
  [[ -n $AGENT_PID ]] && kill -KILL "$AGENT_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
probe() { echo "$A open /dev/infiniband/$1 rdwr syscall | sed s/^/$1-/"; }

mkdir -p "$WORK/traces"
oci_start_agent '{"version": 1, "containers": [
  {"match": {"id": "exec-c1"}, "grants": ["uverbs0"], "trace": true},
  {"match": {"metadata": "*gdrproxy-grants=*"}, "grants": ["uverbs0"], "grants_from_metadata": true,
   "trace": true}]}' --trace-dir "$WORK/traces"

# Part 1: crun run (detached) and crun exec.
b=$WORK/bundle-c1
oci_rootfs "$b" "${A%/*}" "${BENCH%/*}"
"$GP" oci seccomp --listener "$SOCK" --metadata tenant=c1 --runtime crun >"$WORK/seccomp.json" ||
  fail "gdrproxy oci seccomp failed"
python3 - "$b/config.json" "$WORK/seccomp.json" "$A" "$BENCH" <<'PY'
import json, os, sys
path, seccomp, attack, bench = sys.argv[1:]
nodes = ["/dev/infiniband/uverbs0", "/dev/infiniband/uverbs1"]
bind = lambda src: {"destination": src, "type": "bind", "source": src, "options": ["rbind", "ro"]}
json.dump({
  "ociVersion": "1.0.2",
  "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "cwd": "/", "args": ["sleep", "60"],
              "env": ["PATH=/bin:/usr/bin"], "noNewPrivileges": True},
  "root": {"path": "rootfs", "readonly": True},
  "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
             {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]},
             *json.loads(os.environ["OCI_LIB_BINDS"]), bind(os.path.dirname(attack)), bind(os.path.dirname(bench))],
  "linux": {"namespaces": [{"type": t} for t in ("pid", "mount", "ipc", "uts", "network")],
            "devices": [{"path": n, "type": "c", "major": os.major(os.stat(n).st_rdev),
                         "minor": os.minor(os.stat(n).st_rdev), "fileMode": 0o666} for n in nodes],
            "seccomp": json.load(open(seccomp))},
}, open(path, "w"), indent=1)
PY
# No cgroup manager: crun would raise RLIMIT_MEMLOCK for its device program (oci_runtime_test.sh).
crun --root "$WORK/crun" --cgroup-manager=disabled run -d --bundle "$b" exec-c1 >"$WORK/run.out" 2>&1 ||
  { cat "$WORK/run.out"; fail "crun run exit $?"; }
for _ in $(seq 50); do grep -q "container exec-c1: process" "$WORK/agent.log" && break; sleep 0.1; done
grep -q "container exec-c1: process" "$WORK/agent.log" || fail "the agent did not take crun's init"
timeout 30 crun --root "$WORK/crun" --cgroup-manager=disabled exec exec-c1 sh -c \
  "$(probe uverbs0); $(probe uverbs1); $BENCH client 3 /dev/infiniband/uverbs0 >/dev/null; echo bench-rc=\$?" \
  >"$WORK/exec.out" 2>&1 || { cat "$WORK/exec.out"; fail "crun exec exit $?"; }
expect "$WORK/exec.out" "^uverbs0-open.* OK ioctl="
expect "$WORK/exec.out" "^uverbs1-open.* ERR EACCES$"
expect "$WORK/exec.out" "^bench-rc=0$"
expect "$WORK/agent.log" "container exec-c1: process 0 \(running\) joins its session \(2 listeners\), bound to its first caller"
expect "$WORK/agent.log" "container exec-c1: the process its runtime did not name is pid [0-9]+ \(bound at its first call\)"
crun --root "$WORK/crun" delete -f exec-c1 >/dev/null 2>&1
for _ in $(seq 50); do grep -q "container exec-c1 ended" "$WORK/agent.log" && break; sleep 0.1; done
# The exec'd process's calls are the container's: in its trace, the denial and the granted ioctls.
t=$WORK/traces/exec-c1.jsonl
jq -e -s 'any(.[]; .device == "uverbs1" and .decision == "deny")' "$t" >/dev/null ||
  { cat "$t"; fail "the exec's denial is not in the container's trace"; }
jq -e -s 'any(.[]; .device == "uverbs0" and .syscall == "ioctl")' "$t" >/dev/null ||
  { cat "$t"; fail "the exec's uverbs0 ioctls are not in the container's trace"; }
echo "crun exec: served as the container's (granted open and ioctls, the other refused)"

# Part 2: podman exec, through the shim in front of crun.
if ! command -v podman >/dev/null; then
  echo "SKIP: podman is not installed (scripts/setup.sh installs it); crun exec passed"
  exit 77
fi
printf '#!/bin/sh\nLD_PRELOAD=%s exec crun "$@"\n' "$PRELOAD" >"$WORK/crun-memlock"
chmod +x "$WORK/crun-memlock"
jq -n --arg s "$SOCK" --arg rt "$WORK/crun-memlock" \
  '{version: 1, runtime: $rt, listener: $s, grants: ["uverbs0"], sysfs: false}' >"$WORK/runtime.json"
ln -s "$GP" "$WORK/gdrproxy-runtime"
oci_rootfs "$WORK/skel" /run /var "${A%/*}" "${BENCH%/*}"
tar -C "$WORK/skel/rootfs" -cf "$WORK/skel.tar" . && podman import --quiet "$WORK/skel.tar" "$IMAGE" >/dev/null ||
  fail "podman import failed"
pm() {
  timeout 60 podman --cgroup-manager cgroupfs --runtime "$WORK/gdrproxy-runtime" \
    --runtime-flag "gdrproxy-config=$WORK/runtime.json" "$@"
}
adir=${A%/*} bdir=${BENCH%/*}
PODMAN_ID=$(pm run -d --network none --pids-limit=-1 --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
  --device /dev/infiniband/uverbs0 -v /usr/lib:/usr/lib:ro -v /usr/lib64:/usr/lib64:ro \
  -v "$adir:$adir:ro" -v "$bdir:$bdir:ro" "$IMAGE" sleep 60 2>"$WORK/prun.err") ||
  { cat "$WORK/prun.err"; fail "podman run -d exit $?"; }
for _ in $(seq 50); do grep -q "container $PODMAN_ID: process" "$WORK/agent.log" && break; sleep 0.1; done
grep -q "container $PODMAN_ID: process" "$WORK/agent.log" || fail "the agent did not take podman's container"
pm exec "$PODMAN_ID" sh -c "$(probe uverbs0); $BENCH client 3 /dev/infiniband/uverbs0 >/dev/null; echo bench-rc=\$?" \
  >"$WORK/pexec.out" 2>&1 || { cat "$WORK/pexec.out"; fail "podman exec exit $?"; }
expect "$WORK/pexec.out" "^uverbs0-open.* OK ioctl="
expect "$WORK/pexec.out" "^bench-rc=0$"
expect "$WORK/agent.log" "container $PODMAN_ID: process 0 \(running\) joins its session \(2 listeners\), bound to its first caller"
pm rm -f -t 0 "$PODMAN_ID" >/dev/null 2>&1 || fail "podman rm exit $?"
for _ in $(seq 50); do grep -q "container $PODMAN_ID ended" "$WORK/agent.log" && break; sleep 0.1; done
PODMAN_ID_DONE=$PODMAN_ID PODMAN_ID=
n=$(jq -s '[.[] | select(.device == "uverbs0" and .syscall == "ioctl")] | length' "$WORK/traces/$PODMAN_ID_DONE.jsonl")
((n > 0)) || fail "podman exec's uverbs0 ioctls are not in the container's trace"
echo "PASS: crun exec and podman exec (crun) bound to their first caller and served as their container's ($n ioctls traced)"
