#!/usr/bin/env bash
# `gdrproxy runtime` (and its gdrproxy-runtime name) in front of Debian's runc or crun, with the
# agent, on stand-in device nodes. The idea not to miss: the shim grants exactly the devices the
# container asks for in linux.devices when the operator's runtime.json allows them (a node of
# another device made inside is refused by the runtime's device cgroup program), refuses to start
# a container that asks for one it does not (the runtime never runs), and passes every other verb
# through.
# crun 1.8 raises RLIMIT_MEMLOCK to unlimited before loading its device program and gives up
# when it cannot; where root lacks CAP_SYS_RESOURCE (this build machine) the raise is made a
# no-op by MEMLOCK_PRELOAD, a test-only library (the kernel charges BPF programs to the memory
# cgroup since 5.11, so the limit is moot). crun also runs unaided in the VM stage.
# Usage: runtime_shim_test.sh GDRPROXY ATTACK_CLIENT [runc|crun [MEMLOCK_PRELOAD]]
#   (root, the runtime; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
A=$(realpath "$2")
BENCH=$(realpath "$(dirname "$A")/../bench/ioctl_bench")
# shellcheck source=tests/oci/lib.sh
. "$(dirname "$0")/lib.sh"
RT=${3:-runc}
command -v "$RT" >/dev/null || { echo "SKIP: $RT is not installed (scripts/setup.sh installs it)"; exit 77; }
oci_enter "$GP" - "$0" "$@"
WORK=$(mktemp -d /tmp/gdrproxy-shim.XXXXXX)
chmod 755 "$WORK"
AGENT_PID=
# Container ids name the runtime: a runtime's cgroup is named after the id, host-wide, so the runc
# and crun runs of this test, run side by side, would otherwise share a cgroup and the first to
# finish would kill the other's container.
C1=shim-$RT-1 C2=shim-$RT-2 C3=shim-$RT-3 C4=shim-$RT-4 C5=shim-$RT-5
cleanup() {
  local c
  for c in "$C1" "$C2" "$C3" "$C4" "$C5"; do $RT --root "$WORK/rt" delete -f "$c" >/dev/null 2>&1; done
  [[ -n $AGENT_PID ]] && kill -KILL "$AGENT_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
# CAP_SYS_RESOURCE is bit 24 of the effective set.
rt_env=()
if [[ $RT == crun ]] && ((!((0x$(awk '/^CapEff/ {print $2}' /proc/self/status) >> 24) & 1))); then
  [[ -f ${4:-} ]] || fail "crun without CAP_SYS_RESOURCE needs the memlock preload library"
  rt_env=(env "LD_PRELOAD=$4")
  echo "note: root lacks CAP_SYS_RESOURCE here: crun's RLIMIT_MEMLOCK raise is a no-op (LD_PRELOAD=$4)"
fi

mkdir -p "$WORK/traces"
oci_start_agent '{"version": 1, "containers": [{"match": {"id": "shim-*"}, "grants": ["uverbs0", "uverbs1"],
  "grants_from_metadata": true, "trace": true}]}' --trace-dir "$WORK/traces"
# The operator allows uverbs0 only. broker_pidfd_getfd is a key of earlier releases, still
# accepted (it has no effect: the agent's rule decides), so an upgrade keeps old files working.
jq -n --arg s "$SOCK" --arg rt "$RT" '{version: 1, runtime: $rt, listener: $s, grants: ["uverbs0"], sysfs: false,
  broker_pidfd_getfd: true}' >"$WORK/runtime.json"
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
# The other uverbs node by its real number (231:192+N): the stand-ins borrow /dev/zero's and
# /dev/full's, which every container may use.
other = os.makedev(231, 193 if dev == "uverbs0" else 192)
script = (f"echo ib: $(ls /dev/infiniband); {attack} open {node} rdwr syscall | sed s/^/{dev}-/; "
          f"{bench} client 3 {node} >/dev/null; "
          f"mknod /dev/other c {os.major(other)} {os.minor(other)} && head -c1 /dev/other; echo other-rc=$?")
caps = ["CAP_MKNOD"]
bind = lambda src: {"destination": src, "type": "bind", "source": src, "options": ["rbind", "ro"]}
json.dump({
  "ociVersion": "1.0.2",
  "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "cwd": "/", "args": ["sh", "-c", script],
              "env": ["PATH=/bin:/usr/bin"], "noNewPrivileges": True,
              "capabilities": {k: caps for k in ("bounding", "effective", "permitted")}},
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
GDRPROXY_RUNTIME_CONFIG=$WORK/runtime.json "${rt_env[@]}" "$WORK/gdrproxy-runtime" --root "$WORK/rt" run \
  --bundle "$WORK/shim-1" "$C1" >"$WORK/1.out" 2>&1 || { rc=$?; cat "$WORK/1.out"; fail "$C1 exit $rc"; }
expect "$WORK/1.out" "^gdrproxy runtime: .*grants \[uverbs0\]"
expect "$WORK/1.out" "^ib: uverbs0$"
expect "$WORK/1.out" "^uverbs0-open.* OK ioctl="
# CAP_MKNOD is kept: the refusal of the other node is the device cgroup's.
expect "$WORK/1.out" "other.*Operation not permitted"
expect "$WORK/1.out" "^other-rc=1$"
for _ in $(seq 50); do grep -q "$C1 ended" "$WORK/agent.log" && break; sleep 0.1; done
jq -e -s 'any(.[]; .device == "uverbs0" and .syscall == "ioctl")' "$WORK/traces/$C1.jsonl" >/dev/null ||
  fail "$C1's uverbs0 ioctls are not in its trace"

# Not allowed by the operator: refused before the runtime runs.
"$GP" runtime --config "$WORK/runtime.json" -- --root "$WORK/rt" run --bundle "$WORK/shim-2" "$C2" \
  >"$WORK/2.out" 2>&1
rc=$?
[[ $rc == 1 ]] || { cat "$WORK/2.out"; fail "a container asking for uverbs1 was not refused (exit $rc)"; }
expect "$WORK/2.out" "asks for device uverbs1, which .*runtime.json does not grant.*not starting the container"
$RT --root "$WORK/rt" state "$C2" >/dev/null 2>&1 && fail "$RT created $C2 anyway"
grep -q "$C2" "$WORK/agent.log" && fail "the agent saw $C2"
jq -e '.linux.seccomp | not' "$WORK/shim-2/config.json" >/dev/null || fail "the refused bundle was edited"

# A second handler: the link gdrproxy-runtime-two reads runtime-two.json beside the file the
# plain link reads (GDRPROXY_RUNTIME_CONFIG's here), which grants uverbs1; the plain file refused
# it above. A link whose file is missing grants nothing.
jq '.grants = ["uverbs1"]' "$WORK/runtime.json" >"$WORK/runtime-two.json"
ln -s "$GP" "$WORK/gdrproxy-runtime-two" && ln -s "$GP" "$WORK/gdrproxy-runtime-none"
bundle shim-3 uverbs1
GDRPROXY_RUNTIME_CONFIG=$WORK/runtime.json "${rt_env[@]}" "$WORK/gdrproxy-runtime-none" --root "$WORK/rt" \
  run --bundle "$WORK/shim-3" "$C3" >"$WORK/2n.out" 2>&1 && { cat "$WORK/2n.out"; fail "a link with no file of its own granted uverbs1"; }
expect "$WORK/2n.out" "asks for device uverbs1, which .*/runtime-none.json does not exist to grant"
GDRPROXY_RUNTIME_CONFIG=$WORK/runtime.json "${rt_env[@]}" "$WORK/gdrproxy-runtime-two" --root "$WORK/rt" \
  run --bundle "$WORK/shim-3" "$C3" >"$WORK/2t.out" 2>&1 || { rc=$?; cat "$WORK/2t.out"; fail "$C3 through gdrproxy-runtime-two: exit $rc"; }
expect "$WORK/2t.out" "^gdrproxy runtime: .*grants \[uverbs1\]"
expect "$WORK/2t.out" "^ib: uverbs1$"

# The operator's file without the sysfs keys: the synthetic /sys is built from the host's /sys,
# where a stand-in uverbs0 is no RDMA device, so the container is refused naming both (never a
# container with a /sys other than its grant's), before the runtime runs.
jq 'del(.sysfs)' "$WORK/runtime.json" >"$WORK/runtime-default.json"
bundle shim-4 uverbs0
"$GP" runtime --config "$WORK/runtime-default.json" -- --root "$WORK/rt" run --bundle "$WORK/shim-4" "$C4" \
  >"$WORK/4.out" 2>&1 && { cat "$WORK/4.out"; fail "a default-config shim started a container with no /sys of its grant"; }
expect "$WORK/4.out" "granted uverbs0: no RDMA device of /sys has that uverbs node.*not starting the container"
$RT --root "$WORK/rt" state "$C4" >/dev/null 2>&1 && fail "$RT created $C4 anyway"

# A mistyped rails key stops the container before the runtime runs, naming the key.
for bad in '.rails = "yes"' '.rail_state_dir = 1' '.allow_plain_rails = 1'; do
  jq "$bad" "$WORK/runtime.json" >"$WORK/runtime-bad.json"
  "$GP" runtime --config "$WORK/runtime-bad.json" -- --root "$WORK/rt" run --bundle "$WORK/shim-2" "$C2" \
    >"$WORK/5.out" 2>&1 && fail "runtime.json with $bad was accepted"
  key=${bad#.}
  expect "$WORK/5.out" "runtime-bad.json: ${key%% *}: expected .*not starting the container"
done

# An NVIDIA driver of a branch the tables do not hold: with "kernel_allow" the shim asks the
# tables what may run untrapped. Without "nvidia_abi_as" it refuses the container before the
# runtime runs, saying what to set; with it, it judges with the named tables and goes on.
mkdir -p "$WORK/driver/nvidia"
printf 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  610.57.04  Release Build\n' \
  >"$WORK/driver/nvidia/version"
mount --bind "$WORK/driver" /proc/driver || fail "cannot stand in for /proc/driver"
bundle shim-5 uverbs0
jq '.kernel_allow = true' "$WORK/runtime.json" >"$WORK/runtime-nv.json"
"$GP" runtime --config "$WORK/runtime-nv.json" -- --root "$WORK/rt" create --bundle "$WORK/shim-5" "$C5" \
  >"$WORK/6.out" 2>&1 && { cat "$WORK/6.out"; fail "a container was prepared with no tables for the driver"; }
expect "$WORK/6.out" "NVIDIA driver 610.57.04 is of a branch this build's ABI tables do not hold.*not starting the container"
expect "$WORK/6.out" '"nvidia_abi_as" in the agent.s config and runtime.json'
$RT --root "$WORK/rt" state "$C5" >/dev/null 2>&1 && fail "$RT created $C5 anyway"
jq '.kernel_allow = true | .nvidia_abi_as = "595.45.04"' "$WORK/runtime.json" >"$WORK/runtime-nv.json"
"$GP" runtime --config "$WORK/runtime-nv.json" -- --root "$WORK/rt" create --bundle "$WORK/shim-5" "$C5" \
  >"$WORK/7.out" 2>&1
expect "$WORK/7.out" "^gdrproxy runtime: NVIDIA driver 610.57.04: enforcing with the tables of 595.45.04, as the operator named them"
expect "$WORK/7.out" "^gdrproxy runtime: .*grants \[uverbs0\]"
umount /proc/driver

# Other verbs pass through untouched.
"$GP" runtime --runtime "$RT" -- --root "$WORK/rt" list >"$WORK/3.out" 2>&1 || { rc=$?; cat "$WORK/3.out"; fail "list exit $rc"; }
expect "$WORK/3.out" "^(ID|NAME) +PID +STATUS"
echo "PASS: shim in front of $RT granted uverbs0 (the other node refused by the device cgroup), refused uverbs1 before $RT, passed list through"
