#!/usr/bin/env bash
# `gdrproxy runtime` (and its gdrproxy-runtime name) in front of Debian's runc, with the agent, on
# stand-in device nodes. The idea not to miss: the shim grants exactly the devices the container
# asks for in linux.devices when the operator's runtime.json allows them, refuses to start a
# container that asks for one it does not (runc never runs), and passes every other verb through.
# Usage: runtime_shim_test.sh GDRPROXY ATTACK_CLIENT   (root, runc; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
A=$(realpath "$2")
BENCH=$(realpath "$(dirname "$A")/../bench/ioctl_bench")
# shellcheck source=tests/oci/lib.sh
. "$(dirname "$0")/lib.sh"
oci_enter "$GP" - "$0" "$@"
WORK=$(mktemp -d /tmp/gdrproxy-shim.XXXXXX)
chmod 755 "$WORK"
AGENT_PID=
trap 'for c in shim-1 shim-2 shim-4; do runc --root "$WORK/runc" delete -f $c >/dev/null 2>&1; done; [[ -n $AGENT_PID ]] && kill -KILL $AGENT_PID 2>/dev/null; rm -rf "$WORK"' EXIT

mkdir -p "$WORK/traces"
oci_start_agent '{"version": 1, "containers": [{"match": {"id": "shim-*"}, "grants": ["uverbs0", "uverbs1"],
  "grants_from_metadata": true, "trace": true}]}' --trace-dir "$WORK/traces"
# The operator allows uverbs0 only.
jq -n --arg s "$SOCK" '{version: 1, runtime: "runc", listener: $s, grants: ["uverbs0"], sysfs: false}' >"$WORK/runtime.json"
ln -s "$GP" "$WORK/gdrproxy-runtime"

# bundle NAME DEVICE: a bundle whose linux.devices asks for DEVICE (as --device or CDI would).
bundle() {
  local b=$WORK/$1
  oci_rootfs "$b" "${A%/*}" "${BENCH%/*}"
  python3 - "$b/config.json" "$A" "$BENCH" "$2" <<'PY'
import json, os, sys
path, attack, bench, dev = sys.argv[1:]
node = f"/dev/infiniband/{dev}"
st = os.stat(node)
script = (f"echo ib: $(ls /dev/infiniband); {attack} open {node} rdwr syscall | sed s/^/{dev}-/; "
          f"{bench} client 3 {node} >/dev/null")
bind = lambda src: {"destination": src, "type": "bind", "source": src, "options": ["rbind", "ro"]}
json.dump({
  "ociVersion": "1.0.2",
  "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "cwd": "/", "args": ["sh", "-c", script],
              "env": ["PATH=/bin:/usr/bin"], "noNewPrivileges": True},
  "root": {"path": "rootfs", "readonly": True},
  "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
             {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]},
             *json.loads(os.environ["OCI_LIB_BINDS"]), bind(os.path.dirname(attack)), bind(os.path.dirname(bench))],
  "linux": {"namespaces": [{"type": t} for t in ("pid", "mount", "ipc", "uts", "network")],
            "devices": [{"path": node, "type": "c", "major": os.major(st.st_rdev),
                         "minor": os.minor(st.st_rdev), "fileMode": 0o666}],
            "resources": {"devices": [{"allow": False, "access": "rwm"}]}},
}, open(path, "w"), indent=1)
PY
}
bundle shim-1 uverbs0
bundle shim-2 uverbs1

# Allowed: prepared, run, served. Called by its installed name, as an engine would.
GDRPROXY_RUNTIME_CONFIG=$WORK/runtime.json "$WORK/gdrproxy-runtime" --root "$WORK/runc" run \
  --bundle "$WORK/shim-1" shim-1 >"$WORK/1.out" 2>&1 || { cat "$WORK/1.out"; fail "shim-1 exit $?"; }
expect "$WORK/1.out" "^gdrproxy runtime: .*grants \[uverbs0\]"
expect "$WORK/1.out" "^ib: uverbs0$"
expect "$WORK/1.out" "^uverbs0-open.* OK ioctl="
for i in $(seq 50); do grep -q "shim-1 ended" "$WORK/agent.log" && break; sleep 0.1; done
jq -e -s 'any(.[]; .device == "uverbs0" and .syscall == "ioctl")' "$WORK/traces/shim-1.jsonl" >/dev/null ||
  fail "shim-1's uverbs0 ioctls are not in its trace"

# Not allowed by the operator: refused before runc runs.
"$GP" runtime --config "$WORK/runtime.json" -- --root "$WORK/runc" run --bundle "$WORK/shim-2" shim-2 \
  >"$WORK/2.out" 2>&1
rc=$?
[[ $rc == 1 ]] || { cat "$WORK/2.out"; fail "a container asking for uverbs1 was not refused (exit $rc)"; }
expect "$WORK/2.out" "asks for device uverbs1, which .*runtime.json does not grant.*not starting the container"
runc --root "$WORK/runc" state shim-2 >/dev/null 2>&1 && fail "runc created shim-2 anyway"
grep -q "shim-2" "$WORK/agent.log" && fail "the agent saw shim-2"
jq -e '.linux.seccomp | not' "$WORK/shim-2/config.json" >/dev/null || fail "the refused bundle was edited"

# The operator's file without the sysfs keys: the synthetic /sys is built from the host's /sys,
# where a stand-in uverbs0 is no RDMA device, so the container is refused naming both (never a
# container with a /sys other than its grant's), before runc runs.
jq 'del(.sysfs)' "$WORK/runtime.json" >"$WORK/runtime-default.json"
bundle shim-4 uverbs0
"$GP" runtime --config "$WORK/runtime-default.json" -- --root "$WORK/runc" run --bundle "$WORK/shim-4" shim-4 \
  >"$WORK/4.out" 2>&1 && { cat "$WORK/4.out"; fail "a default-config shim started a container with no /sys of its grant"; }
expect "$WORK/4.out" "granted uverbs0: no RDMA device of /sys has that uverbs node.*not starting the container"
runc --root "$WORK/runc" state shim-4 >/dev/null 2>&1 && fail "runc created shim-4 anyway"

# Other verbs pass through untouched.
"$GP" runtime --runtime runc -- --root "$WORK/runc" list >"$WORK/3.out" 2>&1 || { cat "$WORK/3.out"; fail "list exit $?"; }
expect "$WORK/3.out" "^ID +PID +STATUS"
echo "PASS: shim granted uverbs0, refused uverbs1 before runc, passed list through"
