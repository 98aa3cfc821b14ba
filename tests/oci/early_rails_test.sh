#!/usr/bin/env bash
# The rails of a container whose bundle names its network namespace (a pod's) move while the
# runtime creates it, and `start` waits for them (proxy/oci/early_rails.h). The idea not to
# miss: the runtime shim's mover works beside the runtime, so every way the create can end must
# leave the host as before or the container refused, never started without its rails or with
# the rails lost:
#   ok          create, start: the rails are in the namespace, only poststop is hooked; poststop
#               gives them back and nothing is left;
#   create_fails  the runtime's create fails: the mover gives them back by itself;
#   elsewhere   the pid file names a process outside the bundle's namespace (a runtime that
#               did not join it): `start` is refused in one line, the rails given back;
#   move_fails  a rail backs no RDMA device and runtime.json does not allow plain rails:
#               `start` is refused with the cause, the host never changed;
#   mover_killed  the mover is killed while the runtime still creates: `start` is refused, and
#               `gdrproxy hook sweep` (the agent's at start) gives the rails back;
#   deleted_before_start  poststop (runc's delete) while the mover still works waits for it,
#               then gives the rails back;
#   twice       a second create of the same id while the first holds its rails is refused.
# Test-rig parts: the runtime is a script standing for runc, whose create's outcome the case
# chooses; stand-in device nodes; veth rails in a constructed sysfs; the "host" is a network
# namespace of the test's own. Real parts: the runtime shim (`gdrproxy-runtime`), its mover,
# the kernel's namespace moves, poststop and sweep.
# Usage: early_rails_test.sh GDRPROXY   (root; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
# shellcheck source=tests/oci/lib.sh
. "$(dirname "$0")/lib.sh"
OCI_ENTER_TIMEOUT=120 oci_enter "$GP" net "$0" "$@"
WORK=$(mktemp -d /tmp/gdrproxy-early-rails.XXXXXX)
cleanup() {
  exec 2>/dev/null
  local f
  for f in "$WORK"/*/init.pid; do kill -KILL "$(cat "$f")"; done
  pkill -KILL -f "$WORK/" 2>/dev/null
  umount "$WORK/podns" "$WORK"/state/*/*.netns 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
ip link set lo up
oci_veth_rails
mkdir -p "$WORK/rsys/class/infiniband/rxe_rails/ports/1" "$WORK/rsys/class/infiniband/rxe_rails/device/infiniband_verbs/uverbs0" \
  "$WORK/rsys/class/infiniband/rxe_rails/device/net/rail0" "$WORK/rsys/class/infiniband/rxe_rails/device/net/rail1"
touch "$WORK/podns" && unshare --net="$WORK/podns" true || fail "cannot make the pod's network namespace"
STATE=$WORK/state
host_net() { ip -o -4 addr show | grep -E 'rail[01] ' | awk '{print $2, $3, $4}' | sort; }
host_net >"$WORK/net.before"
[[ $(wc -l <"$WORK/net.before") == 2 ]] || fail "the rig's rails: $(cat "$WORK/net.before")"

# The runtime: a script standing for runc. create: per $WORK/mode, "ok" writes the pid of a
# process in the bundle's namespace to --pid-file; "fail" exits 1 and writes none; "elsewhere"
# writes the pid of a process in the host's namespace; "slow" waits 3 s, then does as "ok".
# Every other verb succeeds.
mkdir -p "$WORK/bin"
cat >"$WORK/bin/runc-standin" <<EOS
#!/bin/bash
verb= pidf= prev=
for a; do
  [[ \$prev == --pid-file ]] && pidf=\$a
  [[ -z \$verb && \$a != -* && \$prev != --root && \$prev != --log && \$prev != --log-format ]] && verb=\$a
  prev=\$a
done
[[ \$verb == create ]] || exit 0
mode=\$(cat "$WORK/mode")
[[ \$mode == slow ]] && { sleep 3; mode=ok; }
case \$mode in
  ok) # as runc's create, ended only once its process is in the namespace
    nsenter --net="$WORK/podns" sleep 600 </dev/null >/dev/null 2>&1 &
    for i in \$(seq 200); do [[ \$(stat -L -c %i /proc/\$!/ns/net) == \$(stat -L -c %i "$WORK/podns") ]] && break; sleep 0.01; done
    echo \$! >"\$pidf" ;;
  elsewhere) sleep 600 </dev/null >/dev/null 2>&1 & echo \$! >"\$pidf" ;;
  *) exit 1 ;;
esac
EOS
chmod 755 "$WORK/bin/runc-standin"
ln -s "$GP" "$WORK/bin/gdrproxy-runtime"
runtime_json() {
  jq -n --arg rt "$WORK/bin/runc-standin" --arg s "$WORK/run/agent.sock" --arg sys "$WORK/rsys" --arg st "$STATE" \
    --argjson plain "$1" '{version: 1, runtime: $rt, listener: $s, grants: ["uverbs0"], sysfs: false, rails: true,
    sysfs_root: $sys, allow_plain_rails: $plain, rail_state_dir: $st}' >"$WORK/runtime.json"
}
runtime_json true
# bundle ID: a bundle asking for uverbs0 (the stand-in node's numbers) whose network namespace
# is $WORK/podns.
bundle() {
  mkdir -p "$WORK/$1/rootfs" && (cd "$WORK/$1" && runc spec) || fail "runc spec"
  jq --arg ns "$WORK/podns" '.linux.namespaces |= map(if .type == "network" then . + {path: $ns} else . end)
    | .linux.devices = [{path: "/dev/infiniband/uverbs0", type: "c", major: $ma, minor: $mi}]' \
    --argjson ma "$((0x$(stat -c %t /dev/infiniband/uverbs0)))" --argjson mi "$((0x$(stat -c %T /dev/infiniband/uverbs0)))" \
    "$WORK/$1/config.json" >"$WORK/$1/c.json" && mv "$WORK/$1/c.json" "$WORK/$1/config.json"
}
rt() { GDRPROXY_RUNTIME_CONFIG=$WORK/runtime.json "$WORK/bin/gdrproxy-runtime" --root "$WORK/runc" "$@"; }
create() { rt create --bundle "$WORK/$1" --pid-file "$WORK/$1/init.pid" "$1"; }
in_pod() { nsenter --net="$WORK/podns" ip -o -4 addr show | grep -E 'rail[01] ' | awk '{print $2, $3, $4}' | sort; }
# back WHEN: the host's rails read as before and the state directory is empty (bounded wait: the
# mover works on after the runtime's create has returned).
back() {
  local i
  for i in $(seq 100); do
    host_net | cmp -s - "$WORK/net.before" && [[ -z $(ls -A "$STATE" 2>/dev/null) ]] && return 0
    sleep 0.05
  done
  host_net | diff -u "$WORK/net.before" - >&2
  fail "after $1 the rails are not back as before (state: $(ls -A "$STATE" 2>/dev/null))"
}

echo ok >"$WORK/mode"
bundle c-ok
create c-ok >"$WORK/ok.create" 2>&1 || { cat "$WORK/ok.create"; fail "create (ok)"; }
expect "$WORK/ok.create" "2 rail\(s\) moved while it is created"
jq -e '[.hooks.createRuntime // [] | .[] | select(.args[2] == "create-runtime")] | length == 0' "$WORK/c-ok/config.json" >/dev/null ||
  fail "the bundle still has the createRuntime rail hook"
jq -e '[.hooks.poststop[] | select(.args[2] == "poststop")] | length == 1' "$WORK/c-ok/config.json" >/dev/null ||
  fail "the bundle has no poststop rail hook"
rt start c-ok >"$WORK/ok.start" 2>&1 || { cat "$WORK/ok.start"; fail "start (ok)"; }
in_pod >"$WORK/ok.pod"
cmp -s "$WORK/ok.pod" "$WORK/net.before" || { cat "$WORK/ok.pod"; fail "at start the rails are not in the pod's namespace as they were on the host"; }
host_net | grep -q . && fail "a rail is still on the host after start"
[[ $(awk '{print $1}' "$STATE/c-ok/owner") == $(cat "$WORK/c-ok/init.pid") ]] ||
  fail "the rails' owner is not the container's process: $(cat "$STATE/c-ok/owner")"
"$GP" hook poststop --id c-ok --state-dir "$STATE" >"$WORK/ok.poststop" 2>&1 || { cat "$WORK/ok.poststop"; fail "poststop"; }
back "poststop (ok)"
echo "ok: moved at create, in place at start, given back by poststop"

echo fail >"$WORK/mode"
bundle c-fail
create c-fail >"$WORK/fail.create" 2>&1 && fail "the stand-in's failing create succeeded"
back "a failed create"
echo "create_fails: the mover gave the rails back"

echo elsewhere >"$WORK/mode"
bundle c-else
create c-else >"$WORK/else.create" 2>&1 || { cat "$WORK/else.create"; fail "create (elsewhere)"; }
rt start c-else >"$WORK/else.start" 2>&1 && fail "start succeeded for a process outside the bundle's namespace"
expect "$WORK/else.start" "^gdrproxy runtime: container c-else: its process [0-9]+ is not in the network namespace its bundle names .*; rails given back: not starting the container$"
[[ $(wc -l <"$WORK/else.start") == 1 ]] || fail "the refusal is not one line: $(cat "$WORK/else.start")"
"$GP" hook poststop --id c-else --state-dir "$STATE" >/dev/null 2>&1
back "a refused start (elsewhere) and its poststop"
echo "elsewhere: start refused in one line, rails given back"

runtime_json false
echo ok >"$WORK/mode"
bundle c-plain
create c-plain >"$WORK/plain.create" 2>&1 || { cat "$WORK/plain.create"; fail "create (move_fails)"; }
rt start c-plain >"$WORK/plain.start" 2>&1 && fail "start succeeded though the move failed"
expect "$WORK/plain.start" "rail rail0 backs no RDMA device .*: not starting the container$"
"$GP" hook poststop --id c-plain --state-dir "$STATE" >/dev/null 2>&1
back "a failed move"
runtime_json true
echo "move_fails: start refused with the cause, the host as before"

# slow_create ID: a create of ID whose runtime takes 3 s, in the background (its pid in
# `creating`), returned from once the mover has moved the rails out of the host.
slow_create() {
  echo slow >"$WORK/mode"
  bundle "$1"
  create "$1" >"$WORK/$1.create" 2>&1 &
  creating=$!
  for _ in $(seq 100); do host_net | grep -q . || return 0; sleep 0.05; done
  fail "$1: the mover had not moved the rails 5 s after the create began"
}

slow_create c-kill
# Once the shim has become the runtime, the only process left with its command line is the mover.
for _ in $(seq 100); do
  pgrep -f "runc-standin --root $WORK/runc create --bundle $WORK/c-kill " >/dev/null && break
  sleep 0.05
done
mover=$(pgrep -f "gdrproxy-runtime --root $WORK/runc create --bundle $WORK/c-kill ")
[[ -n $mover ]] || fail "no mover found while the runtime creates"
# shellcheck disable=SC2086 # one argument per pid
kill -KILL $mover
wait "$creating" || { cat "$WORK/c-kill.create"; fail "create (mover_killed)"; }
rt start c-kill >"$WORK/kill.start" 2>&1 && fail "start succeeded though its mover was killed"
expect "$WORK/kill.start" "container c-kill: the move of its rails ended without a word"
"$GP" hook sweep --state-dir "$STATE" >"$WORK/kill.sweep" 2>&1
expect "$WORK/kill.sweep" "container c-kill is gone .*: its rails were given back"
back "the mover's kill and a sweep"
echo "mover_killed: start refused, the sweep gave the rails back"

# Deleted before its start (a CRI request given up between create and start): the poststop hook
# waits for the mover's end before it reads the journal, so no rail moves after the give-back.
slow_create c-del
"$GP" hook poststop --id c-del --state-dir "$STATE" >"$WORK/del.poststop" 2>&1 &
post=$!
sleep 0.5
kill -0 "$post" 2>/dev/null || fail "poststop did not wait for the mover still at work"
wait "$creating" || { cat "$WORK/c-del.create"; fail "the create of c-del"; }
wait "$post" || { cat "$WORK/del.poststop"; fail "poststop of c-del"; }
back "a poststop while its mover worked"
echo "deleted_before_start: poststop waited for the mover, then gave the rails back"

slow_create c-twice
create c-twice >"$WORK/twice.second" 2>&1 && fail "a second create of c-twice succeeded while the first held its rails"
expect "$WORK/twice.second" "its rails are being moved already"
wait "$creating" || fail "the first create of c-twice"
rt start c-twice >"$WORK/twice.start" 2>&1 || { cat "$WORK/twice.start" "$STATE"/c-twice/early-move.log; fail "start of c-twice"; }
"$GP" hook poststop --id c-twice --state-dir "$STATE" >/dev/null 2>&1
back "c-twice's poststop"
echo "twice: a second create of the same id refused"
echo "PASS: rails moved at create: in place before start, or refused and given back, in every case"
