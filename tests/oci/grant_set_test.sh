#!/usr/bin/env bash
# One grant set per container, whichever way it comes in: a container engine is given CDI device
# gdrproxy.dev/device=mlx5_1 from `gdrproxy cdi generate` (its edits applied to config.json as
# CDI says: device nodes, hooks), then calls `gdrproxy runtime`, which prepares the bundle for
# what linux.devices asks. The idea not to miss: every part the container gets must name the same
# NIC: the /dev nodes, the device cgroup's allow rules, the grants in listenerMetadata (which the
# agent's session takes), the synthetic /sys (class/infiniband and class/net), and the rail the
# hooks move; and a device of another NIC added to linux.devices by hand is refused outright.
# The host is a constructed HGX node (16 RoCE NICs; uverbsN is mlx5_N, its netdev rdmaN) over
# stand-in device nodes, named as such; the runtime exec'd after the shim is `true`.
# Usage: grant_set_test.sh GDRPROXY SOURCE_DIR   (root; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
TK=$(dirname "$GP")/gdrproxy-testkit  # the tests' tool: stand-in devices, exercisers
SRC=$(realpath "$2")
[[ $EUID == 0 ]] || { echo "SKIP: needs root"; exit 77; }
if [[ -z ${GDRPROXY_GRANT_SET_INNER:-} ]]; then
  GDRPROXY_GRANT_SET_INNER=1 exec timeout -k 5 120 "$TK" standin "$0" "$@"
fi
WORK=$(mktemp -d /tmp/gdrproxy-grantset.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$SRC/tests/sysfs/prepare_fixture.sh" hgx-roce16 "$WORK/fx" >/dev/null || fail "fixture"
"$GP" cdi generate --sysfs-root "$WORK/fx/sys" --proc-root "$WORK/fx/proc" --output "$WORK/spec.json" ||
  fail "cdi generate exit $?"
jq -n --arg s "$WORK/agent.sock" --arg h "$WORK/fx/sys" \
  '{version: 1, runtime: "true", listener: $s, grants: ["uverbs*", "rdma_cm"], sysfs: true, sysfs_root: $h}' \
  >"$WORK/runtime.json"

# bundle DIR [EXTRA_NODE]: a bundle with CDI device mlx5_1 applied (and EXTRA_NODE added by hand).
bundle() {
  mkdir -p "$1/rootfs"
  python3 - "$WORK/spec.json" "$1/config.json" "${2:-}" <<'PY'
import json, os, sys
spec, out, extra = sys.argv[1], sys.argv[2], sys.argv[3]
spec = json.load(open(spec))
dev = next(d for d in spec["devices"] if d["name"] == "mlx5_1")
config = {"ociVersion": "1.0.2", "process": {"args": ["true"], "cwd": "/"},
          "root": {"path": "rootfs"},
          "mounts": [{"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["ro"]}],
          "linux": {"devices": [], "resources": {"devices": [{"allow": False, "access": "rwm"}]}}}
def node(path):
    st = os.stat(path)
    return {"path": path, "type": "c", "major": os.major(st.st_rdev), "minor": os.minor(st.st_rdev),
            "fileMode": 0o666}
# What a CDI-aware engine does with the device's (and the spec's) containerEdits.
for edits in (spec.get("containerEdits", {}), dev["containerEdits"]):
    for n in edits.get("deviceNodes", []):
        config["linux"]["devices"].append(node(n.get("hostPath", n["path"])))
    for h in edits.get("hooks", []):
        config.setdefault("hooks", {}).setdefault(h["hookName"], []).append(
            {k: h[k] for k in ("path", "args", "env") if k in h})
if extra:
    config["linux"]["devices"].append(node(extra))
json.dump(config, open(out, "w"), indent=1)
PY
}

b=$WORK/b1
bundle "$b"
"$GP" runtime --config "$WORK/runtime.json" -- create --bundle "$b" grant-1 >"$WORK/shim.out" 2>&1 ||
  { cat "$WORK/shim.out"; fail "the shim refused the CDI device"; }
python3 - "$b/config.json" "$b/gdrproxy-sys" <<'PY' || { cat "$WORK/shim.out"; fail "the parts disagree"; }
import json, os, sys
config, tree = json.load(open(sys.argv[1])), sys.argv[2]
lin = config["linux"]
nodes = sorted(d["path"] for d in lin["devices"])
want = ["/dev/infiniband/rdma_cm", "/dev/infiniband/uverbs1"]
assert nodes == want, f"/dev nodes {nodes}"
numbers = {(d["major"], d["minor"]) for d in lin["devices"]}
allowed = {(r["major"], r["minor"]) for r in lin["resources"]["devices"]
           if r.get("allow") and "major" in r and "minor" in r}
assert allowed == numbers, f"cgroup allows {sorted(allowed)}, nodes are {sorted(numbers)}"
meta = lin["seccomp"]["listenerMetadata"].split("\n")
assert "gdrproxy-grants=uverbs1,rdma_cm" in meta, f"listenerMetadata {meta}"
ib = sorted(os.listdir(tree + "/class/infiniband"))
net = sorted(os.listdir(tree + "/class/net"))
assert ib == ["mlx5_1"], f"/sys/class/infiniband {ib}"
assert net == ["rdma1"], f"/sys/class/net {net}"
sys_mounts = [m for m in config["mounts"] if m["destination"] == "/sys"]
assert len(sys_mounts) == 1 and sys_mounts[0]["source"] == tree, sys_mounts
rails = [h["args"][h["args"].index("--rails") + 1] for h in config["hooks"]["createRuntime"]
         if "--rails" in h["args"]]
assert rails == ["rdma1"], f"rails moved {rails}"
print("one grant set: /dev, cgroup, metadata, /sys and the rail all name mlx5_1 (uverbs1, rdma1)")
PY

# Another NIC's node added by hand is within runtime.json's globs but not what CDI gave: the
# shim still prepares what linux.devices asks (the operator's file is the ceiling), so the /sys
# and the grants follow the nodes: both NICs, never one in /dev and another in /sys.
b=$WORK/b2
bundle "$b" /dev/infiniband/uverbs0
"$GP" runtime --config "$WORK/runtime.json" -- create --bundle "$b" grant-2 >"$WORK/shim2.out" 2>&1 ||
  { cat "$WORK/shim2.out"; fail "the shim refused a device within its grants"; }
python3 - "$b/config.json" "$b/gdrproxy-sys" <<'PY' || fail "the parts disagree for two NICs"
import json, os, sys
config, tree = json.load(open(sys.argv[1])), sys.argv[2]
meta = config["linux"]["seccomp"]["listenerMetadata"].split("\n")
grants = next(l for l in meta if l.startswith("gdrproxy-grants=")).split("=", 1)[1].split(",")
assert sorted(grants) == ["rdma_cm", "uverbs0", "uverbs1"], grants
assert sorted(os.listdir(tree + "/class/infiniband")) == ["mlx5_0", "mlx5_1"]
print("two NICs asked: grants and /sys both have mlx5_0 and mlx5_1")
PY

# Outside the operator's grants: refused before anything is written.
jq '.grants = ["uverbs1", "rdma_cm"]' "$WORK/runtime.json" >"$WORK/narrow.json"
b=$WORK/b3
bundle "$b" /dev/infiniband/uverbs0
cp "$b/config.json" "$WORK/b3.before"
"$GP" runtime --config "$WORK/narrow.json" -- create --bundle "$b" grant-3 >"$WORK/shim3.out" 2>&1 &&
  fail "a device outside the operator's grants was accepted"
grep -q "asks for device uverbs0" "$WORK/shim3.out" || { cat "$WORK/shim3.out"; fail "no reason naming uverbs0"; }
cmp -s "$b/config.json" "$WORK/b3.before" || fail "a refused bundle was edited"
[[ ! -e $b/gdrproxy-sys ]] || fail "a refused bundle got a /sys tree"
echo "PASS: one grant set"
