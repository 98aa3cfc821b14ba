#!/usr/bin/env bash
# `gdrproxy oci prepare --rails` with Debian's runc: the createRuntime hook moves two veth rails
# into the container's network namespace with the multirail ARP profile, and after `runc kill -9`
# and `runc delete` the poststop hook gives them back. The idea not to miss: the "host" here is a
# network namespace this test made, and after the container is gone its addresses, routes, rules
# and the rails' sysctls must read back byte for byte as before. The rails are plain veths (no
# RDMA device exists here): --allow-plain-rails, named as such. A veth dies with the namespace it
# is in (a physical NIC would return to the initial namespace), so the container's network
# namespace is a pinned one (linux.namespaces path), as engines that set up networking use.
# A second container's poststop never runs (its init killed, the runtime never told): the next
# agent's start finds its process gone and gives its rails back, byte for byte as well.
# Usage: rails_hooks_test.sh GDRPROXY ATTACK_CLIENT   (root, runc; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
A=$(realpath "$2")
# shellcheck source=tests/oci/lib.sh
. "$(dirname "$0")/lib.sh"
# A network namespace of our own is the host; stand-in device nodes in a mount namespace.
oci_enter "$GP" net "$0" "$@"
WORK=$(mktemp -d /tmp/gdrproxy-rails.XXXXXX)
chmod 755 "$WORK"
AGENT_PID=
ID=rails-$$
ID2=rails-b-$$
trap 'runc --root "$WORK/runc" delete -f $ID >/dev/null 2>&1; runc --root "$WORK/runc" delete -f $ID2 >/dev/null 2>&1; [[ -n $AGENT_PID ]] && kill -KILL $AGENT_PID 2>/dev/null; umount "$WORK/ctr.net" 2>/dev/null; rm -rf "$WORK"' EXIT

oci_veth_rails
snapshot() {
  ip -d addr show
  ip route show table all | sort  # the set of routes; the kernel orders its own link-local ones by when a link came up
  ip rule show
  sysctl -a 2>/dev/null | grep -E '\.rail[01]\.' | sort
}
# Wait out IPv6 duplicate address detection, so that both snapshots see settled addresses.
for i in $(seq 50); do [[ -z $(ip -6 addr show tentative) ]] && break; sleep 0.1; done
snapshot >"$WORK/before.txt"

oci_start_agent '{"version": 1, "containers": [{"match": {"id": "rails-*"}, "grants": ["uverbs0"], "grants_from_metadata": true}]}'

touch "$WORK/ctr.net"
unshare --net="$WORK/ctr.net" true || fail "cannot pin a network namespace"
b=$WORK/bundle
oci_rootfs "$b"
python3 - "$b/config.json" "$WORK/ctr.net" <<'PY'
import json, os, sys
script = ("ip -o -4 addr show; echo arp_ignore=$(cat /proc/sys/net/ipv4/conf/rail0/arp_ignore); "
          "echo up; sleep 60")
bind = lambda src: {"destination": src, "type": "bind", "source": src, "options": ["rbind", "ro"]}
json.dump({
  "ociVersion": "1.0.2",
  "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "cwd": "/", "args": ["sh", "-c", script],
              "env": ["PATH=/bin:/usr/bin"], "noNewPrivileges": True},
  "root": {"path": "rootfs", "readonly": True},
  "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
             {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]},
             *json.loads(os.environ["OCI_LIB_BINDS"])],
  "linux": {"namespaces": [{"type": t} for t in ("pid", "mount", "ipc", "uts")] +
                          [{"type": "network", "path": sys.argv[2]}],
            "resources": {"devices": [{"allow": False, "access": "rwm"}]}},
}, open(sys.argv[1], "w"), indent=1)
PY
"$GP" oci prepare "$b" --grant uverbs0 --listener "$SOCK" --no-sysfs --rails rail0,rail1 --allow-plain-rails \
  >"$WORK/prepare.out" 2>&1 || { cat "$WORK/prepare.out"; fail "oci prepare failed"; }
expect "$WORK/prepare.out" "2 rail\(s\) by hooks"

runc --root "$WORK/runc" run -d --bundle "$b" "$ID" >"$WORK/c.out" 2>"$WORK/runc.err" ||
  { cat "$WORK/runc.err"; fail "runc run -d failed"; }
for i in $(seq 100); do grep -q "^up$" "$WORK/c.out" && break; sleep 0.1; done
expect "$WORK/c.out" "rail0 +inet 198\.51\.100\.10/24"
expect "$WORK/c.out" "rail1 +inet 198\.51\.100\.11/24"
expect "$WORK/c.out" "^arp_ignore=1$"
ip link show rail0 >/dev/null 2>&1 && fail "rail0 is still on the host while the container runs"
# A second hook for the same container and rails finds the journal claimed and changes nothing.
runc --root "$WORK/runc" state "$ID" | "$GP" hook create-runtime --rails rail0,rail1 \
  --allow-plain-rails >"$WORK/again.out" 2>&1 && fail "a second create-runtime hook was let through"
expect "$WORK/again.out" "another hook is moving these rails"
runc --root "$WORK/runc" kill "$ID" KILL
for i in $(seq 50); do [[ $(runc --root "$WORK/runc" state "$ID" 2>/dev/null | jq -r .status) == stopped ]] && break; sleep 0.1; done
runc --root "$WORK/runc" delete "$ID" 2>>"$WORK/runc.err" || { cat "$WORK/runc.err"; fail "runc delete failed"; }
for i in $(seq 50); do [[ -z $(ip -6 addr show tentative) ]] && break; sleep 0.1; done
snapshot >"$WORK/after.txt"
diff -u "$WORK/before.txt" "$WORK/after.txt" || { cat "$WORK/runc.err"; fail "the host's network state differs after the container"; }
[[ ! -e /run/gdrproxy/$ID ]] || fail "the journal directory /run/gdrproxy/$ID was left behind"
# A second poststop (by hand, later) finds nothing to do.
"$GP" hook poststop --id "$ID" || fail "a repeated poststop failed"

# The second container: its init is killed and no `runc delete` follows, so no poststop runs.
: >"$WORK/c.out"
runc --root "$WORK/runc" run -d --bundle "$b" "$ID2" >"$WORK/c.out" 2>"$WORK/runc.err" ||
  { cat "$WORK/runc.err"; fail "runc run -d of the second container failed"; }
for i in $(seq 100); do grep -q "^up$" "$WORK/c.out" && break; sleep 0.1; done
ip link show rail0 >/dev/null 2>&1 && fail "rail0 is on the host while the second container runs"
pid=$(runc --root "$WORK/runc" state "$ID2" | jq -r .pid)
[[ -f /run/gdrproxy/$ID2/owner ]] || fail "no owner file in /run/gdrproxy/$ID2"
kill -KILL "$pid"
for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
ip link show rail0 >/dev/null 2>&1 && fail "rail0 came back with no poststop (the test assumes it stays out)"
kill -TERM "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null; AGENT_PID=
OCI_RAIL_STATE_DIR=/run/gdrproxy oci_start_agent '{"version": 1, "containers": []}'
# The sweep runs before the agent serves (its socket exists a moment earlier).
for i in $(seq 100); do grep -q "gdrproxy agent: serving" "$WORK/agent.log" && break; sleep 0.05; done
expect "$WORK/agent.log" "container $ID2 is gone \(process $pid\): its rails were given back"
for i in $(seq 50); do [[ -z $(ip -6 addr show tentative) ]] && break; sleep 0.1; done
snapshot >"$WORK/after2.txt"
diff -u "$WORK/before.txt" "$WORK/after2.txt" || fail "the host's network state differs after the agent's sweep"
[[ ! -e /run/gdrproxy/$ID2 ]] || fail "the swept journal directory was left behind"
echo "PASS: rails moved with the multirail profile and given back byte for byte, by poststop and by the agent's sweep"
