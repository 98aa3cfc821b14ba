#!/usr/bin/env bash
# A bundle that asks for a device by an out-of-range number, in front of Debian's runc. The idea
# not to miss: runc packs linux.devices numbers into the kernel's 32-bit dev_t and drops the high
# bits, so major 231+4096 makes the node 231:N. A check that looks the unnormalised number up
# finds no device and lets the container start with a node of an ungranted device; the shim and
# `gdrproxy oci prepare` must refuse such an entry before the runtime runs.
# Usage: device_number_test.sh GDRPROXY ATTACK_CLIENT   (root, runc; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
A=$(realpath "$2")
# shellcheck source=tests/oci/lib.sh
. "$(dirname "$0")/../oci/lib.sh"
oci_enter "$GP" - "$0" "$@"
WORK=$(mktemp -d /tmp/gdrproxy-devnum.XXXXXX)
chmod 755 "$WORK"
AGENT_PID=
IDS=(devnum-major devnum-minor devnum-prepare)
cleanup() {
  local c
  for c in "${IDS[@]}"; do runc --root "$WORK/rt" delete -f "$c" >/dev/null 2>&1; done
  [[ -n $AGENT_PID ]] && kill -KILL "$AGENT_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

oci_start_agent '{"version": 1, "containers": [{"match": {"id": "devnum-*"}, "grants": ["uverbs0"]}]}'
jq -n --arg s "$SOCK" '{version: 1, runtime: "runc", listener: $s, grants: ["uverbs0"], sysfs: false}' \
  >"$WORK/runtime.json"

# bundle NAME MAJOR MINOR: asks for /dev/infiniband/uverbs1 by these numbers and lists the node
# runc made.
bundle() {
  local b=$WORK/$1
  oci_rootfs "$b" "${A%/*}"
  python3 - "$b/config.json" "$2" "$3" <<'PY'
import json, sys
path, major, minor = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
json.dump({
  "ociVersion": "1.0.2",
  "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "cwd": "/",
              "args": ["sh", "-c", "echo made: $(stat -c '%t:%T' /dev/infiniband/uverbs1)"],
              "env": ["PATH=/bin:/usr/bin"], "noNewPrivileges": True},
  "root": {"path": "rootfs", "readonly": True},
  "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
             {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]}],
  "linux": {"namespaces": [{"type": t} for t in ("pid", "mount", "ipc", "uts", "network")],
            "devices": [{"path": "/dev/infiniband/uverbs1", "type": "c", "major": major, "minor": minor,
                         "fileMode": 0o666}],
            "resources": {"devices": [{"allow": False, "access": "rwm"}]}},
}, open(path, "w"), indent=1)
PY
}

# uverbs1 is 231:193; the operator grants uverbs0 (231:192) only.
refused() {  # ID MAJOR MINOR EXPECTED-REASON
  bundle "$1" "$2" "$3"
  "$GP" runtime --config "$WORK/runtime.json" -- --root "$WORK/rt" run --bundle "$WORK/$1" "$1" \
    >"$WORK/$1.out" 2>&1
  local rc=$?
  if [[ $rc == 0 ]]; then
    cat "$WORK/$1.out"
    fail "$1: the shim started a container asking for $2:$3 (runc made the node: $(grep -o 'made: .*' "$WORK/$1.out"))"
  fi
  expect "$WORK/$1.out" "$4"
  runc --root "$WORK/rt" state "$1" >/dev/null 2>&1 && fail "runc created $1 anyway"
}
refused devnum-major $((231 + 4096)) 193 'linux.devices entry "/dev/infiniband/uverbs1": major 4327 is beyond 4095'
refused devnum-minor 231 $((193 + (1 << 20))) 'linux.devices entry "/dev/infiniband/uverbs1": minor 1048769 is beyond 1048575'

# `gdrproxy oci prepare` (the operator's bundle editor) refuses it too and leaves the bundle as it was.
bundle devnum-prepare $((231 + 4096)) 193
cp "$WORK/devnum-prepare/config.json" "$WORK/prepare-before.json"
"$GP" oci prepare "$WORK/devnum-prepare" --listener "$SOCK" --grant uverbs0 >"$WORK/prepare.out" 2>&1 &&
  { cat "$WORK/prepare.out"; fail "oci prepare accepted major 4327"; }
expect "$WORK/prepare.out" "major 4327 is beyond 4095"
cmp -s "$WORK/prepare-before.json" "$WORK/devnum-prepare/config.json" || fail "oci prepare edited the refused bundle"
echo "PASS: out-of-range device numbers (major 4327, minor 1048769) refused by the shim and by oci prepare; runc never ran"
