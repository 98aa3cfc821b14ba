#!/usr/bin/env bash
# The agent soak with chaos (issue 33, items 3 and 4): LIFECYCLES containers, CONCURRENCY at once,
# each through `gdrproxy runtime` (the shim in front of Debian's runc) and `gdrproxy agent
# --fd-store`: create, start, its init's device calls (soak_client: opens and uverbs ioctls on a
# granted stand-in node, opens of an ungranted one), a `runc exec` making the same calls, kill,
# delete. The containers of the first RAIL_SLOTS workers get two veth rails of their own moved in
# by the rail hooks (in this script's own network namespace, the "host"), and every third of
# those is killed and left undeleted, so that the next agent's sweep must give its rails back.
# Every KILL_EVERY lifecycles the agent is SIGKILLed, under load, and restarted, but for the last
# CALM lifecycles, which the last agent serves alone, so that one incarnation lives long enough
# after its warm-up to be judged; once, halfway, the fd-store holder is SIGKILLed.
# The idea not to miss: resource use is judged at quiet points (every SAMPLE_EVERY lifecycles the
# workers pause and the agent is left with no container), where a leak cannot hide behind the
# load, and only against the same process's own first quiet sample after its warm-up (a restarted
# agent is a new process: each incarnation that has 3 quiet samples after its warm-up is judged,
# the others are only reported); and each container's calls are judged by
# its own client (exit 0: every call answered, none with ENOSYS, the ungranted node never
# opened), every wait bounded, a hung one reported with its id.
# A handover cut by a kill (only possible while no holder runs, see below) is counted apart as
# "KNOWN GAP", only with the evidence; anything else is a failure. A create or exec that finds no agent listening (the
# holder keeps the socket, so only after the holder too was killed) is retried and counted.
# At the end: survivors outlive one more restart, `ctl list` names exactly the running
# containers with their grants, every rail is back on the host exactly as before and the rail
# state dir is empty. Prints the resource curve (quiet points), each kill and the verdicts.
# Usage: tests/bench/agent_soak.sh BUILD_DIR [LIFECYCLES [CONCURRENCY [KILL_EVERY]]]
#   (root, runc; 77 = skipped; defaults 10000, 50, 300; docs/PERFORMANCE.md, "Agent soak")
# Environment: SOAK_SAMPLE_EVERY (lifecycles between quiet points; LIFECYCLES/20, at most
# KILL_EVERY/2, at least 20), SOAK_WARMUP (lifecycles a process serves before its baseline;
# LIFECYCLES/10, at least SAMPLE_EVERY: its heap grows with the concurrency it has seen),
# SOAK_CALM (lifecycles at the end without agent kills; 3/10 of LIFECYCLES), SOAK_RAIL_SLOTS
# (4), SOAK_ROUNDS (client rounds per process; 20), SOAK_HOLDER_KILL_AT (LIFECYCLES/2; 0: never),
# SOAK_TOLERANCE_PCT (5), SOAK_TIMEOUT (seconds for the whole run; 120 + LIFECYCLES),
# SOAK_OUT (a directory that receives the logs, the curve sampled each second and what each
# failed container printed).
set -uo pipefail
BUILD=$(realpath "${1:?usage: agent_soak.sh BUILD_DIR [LIFECYCLES [CONCURRENCY [KILL_EVERY]]]}")
GP=$BUILD/gdrproxy
CLIENT=$BUILD/tests/bench/soak_client
N=${2:-10000} W=${3:-50} KILL_EVERY=${4:-300}
SAMPLE_EVERY=$((N / 20 < KILL_EVERY / 2 ? N / 20 : KILL_EVERY / 2))
SAMPLE_EVERY=${SOAK_SAMPLE_EVERY:-$((SAMPLE_EVERY > 20 ? SAMPLE_EVERY : 20))}
WARMUP=${SOAK_WARMUP:-$((N / 10 > SAMPLE_EVERY ? N / 10 : SAMPLE_EVERY))}
CALM=${SOAK_CALM:-$((N * 3 / 10))}
RAIL_SLOTS=${SOAK_RAIL_SLOTS:-4}
ROUNDS=${SOAK_ROUNDS:-20}
HOLDER_KILL_AT=${SOAK_HOLDER_KILL_AT:-$((N / 2))}
TOL=${SOAK_TOLERANCE_PCT:-5}
((RAIL_SLOTS <= W)) || RAIL_SLOTS=$W
OP_TIMEOUT=30  # seconds for any one runtime call or wait: longer is a hang
# shellcheck source=tests/oci/lib.sh
. "$(dirname "$0")/../oci/lib.sh"
[[ -x $CLIENT ]] || { echo "agent_soak: no $CLIENT (ninja -C $BUILD soak_client)" >&2; exit 2; }
OCI_ENTER_TIMEOUT=${SOAK_TIMEOUT:-$((120 + N))} oci_enter "$GP" net "$0" "$@"

WORK=$(mktemp -d /tmp/gdrproxy-soak.XXXXXX)
# The bundles and logs on a tmpfs of the soak's own (containerd keeps bundles in /run); it goes
# with this private mount namespace.
mount -t tmpfs -o mode=755 tmpfs "$WORK"
mkdir -p "$WORK/run" "$WORK/out" "$WORK/b" "$WORK/w"
SOCK=$WORK/run/agent.sock CTL=$WORK/run/agent.ctl STORE=$WORK/run/fds.sock STATE=$WORK/run/rails
PREFIX=soak$$-  # a runtime names its cgroup after the id, host-wide
AGENT_PID='' INCARNATION=0 HOLDER_INCARNATION=0
WORKER_PIDS=() SAMPLER_PID=
rt() { timeout -k 2 "$OP_TIMEOUT" "$GP" runtime --config "$1" -- --root "$WORK/runc" "${@:2}"; }
runc_() { timeout -k 2 "$OP_TIMEOUT" runc --root "$WORK/runc" "$@"; }
# holder_pids: the processes listening on the soak's fd-store socket.
holder_pids() { ss -xlpH 2>/dev/null | grep -F -- "$STORE " | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u; }
cleanup() {
  local p id
  exec 2>/dev/null
  for p in "${WORKER_PIDS[@]}" $SAMPLER_PID $AGENT_PID $(holder_pids); do kill -KILL "$p"; done
  for p in "${WORKER_PIDS[@]}" $SAMPLER_PID $AGENT_PID; do wait "$p"; done
  for id in $(runc --root "$WORK/runc" list -q); do
    timeout 20 "$GP" runtime --config "$WORK/runtime.json" -- --root "$WORK/runc" delete -f "$id" >/dev/null
  done
  if [[ -n ${SOAK_OUT:-} ]]; then
    mkdir -p "$SOAK_OUT/out" && cp "$WORK"/*.log "$WORK"/*.txt "$WORK"/*.data "$SOAK_OUT"/ && cat "$WORK"/w/*.windows >"$SOAK_OUT/windows.txt"
    # What each failed container printed.
    for id in $(cat "$WORK/failures.txt" "$WORK/casualties.txt" | grep -o "^${PREFIX}[^:]*"); do
      cp "$WORK/out/$id".* "$SOAK_OUT/out/"
    done
  fi
  umount "$WORK/ctr.net"
  umount -R "$WORK"
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 124' TERM INT  # the whole run's timeout: cleaned up all the same
failure() { echo "$*" >>"$WORK/failures.txt"; }
die() {
  echo "FAIL: $*" >&2
  tail -n 30 "$WORK/agent.$INCARNATION.log" 2>/dev/null | sed 's/^/  [agent] /' >&2
  exit 1
}
ms() { echo $(($(date +%s%N) / 1000000)); }

# --- The host: rail slots (two veths each, addresses in 198.51.100.0/24) and, for each, a
# constructed sysfs in which they are the netdevs of uverbs0's RDMA device (test rig: a veth
# backs no RDMA device, hence allow_plain_rails), so that the shim's "rails" finds them.
ip link set lo up
for ((k = 0; k < RAIL_SLOTS; k++)); do
  for r in a b; do
    ip link add "r$k$r" type veth peer name "r$k${r}p" || die "cannot make rail r$k$r"
    host=$((10 + 2 * k)) && [[ $r == b ]] && host=$((host + 1))
    ip addr add "198.51.100.$host/24" dev "r$k$r"
    ip link set "r$k$r" up && ip link set "r$k${r}p" up
  done
  d=$WORK/rsys$k/class/infiniband/rxe_r$k
  mkdir -p "$d/ports/1" "$d/device/infiniband_verbs/uverbs0" "$d/device/net/r${k}a" "$d/device/net/r${k}b"
done
settle() { for _ in $(seq 50); do [[ -z $(ip -6 addr show tentative) ]] && break; sleep 0.1; done; }
host_net() {
  settle
  ip -d addr show
  ip route show table all | sort
  ip rule show
  sysctl -a 2>/dev/null | grep -E '\.r[0-9]+[ab]p?\.' | sort
}
host_net >"$WORK/net.before"
# Containers without rails share one network namespace (pinned here): a namespace each would
# only add the kernel's cleanup of thousands of them.
touch "$WORK/ctr.net"
unshare --net="$WORK/ctr.net" true || die "cannot pin a network namespace"

# --- The agent's rule, the operator's runtime.json (one per rail slot) and the bundles.
echo "{\"version\": 1, \"containers\": [{\"match\": {\"id\": \"$PREFIX*\"}, \"grants\": [\"uverbs0\"],
  \"grants_from_metadata\": true}]}" >"$WORK/agent.json"
jq -n --arg s "$SOCK" '{version: 1, runtime: "runc", listener: $s, grants: ["uverbs0"], sysfs: false}' \
  >"$WORK/runtime.json"
for ((k = 0; k < RAIL_SLOTS; k++)); do
  jq --arg sys "$WORK/rsys$k" --arg st "$STATE" \
    '.rails = true | .sysfs_root = $sys | .allow_plain_rails = true | .rail_state_dir = $st' \
    "$WORK/runtime.json" >"$WORK/runtime.rails$k.json"
done
oci_rootfs "$WORK" "${CLIENT%/*}"
# template NETNS_PATH: a config.json asking for uverbs0 (linux.devices, as --device would), with
# the stand-in uverbs1 bound in as a file (its number is /dev/full's, which the device cgroup
# allows: only the agent refuses its open). The init makes its calls, says how they went and
# waits to be killed.
template() {
  python3 - "$1" "$CLIENT" "$ROUNDS" "$WORK/rootfs" <<'PY'
import json, os, sys
netns, client, rounds, rootfs = sys.argv[1:]
st = os.stat("/dev/infiniband/uverbs0")
calls = f"{client} {rounds} /dev/infiniband/uverbs0 /dev/infiniband/uverbs1"
bind = lambda src, dst=None: {"destination": dst or src, "type": "bind", "source": src, "options": ["bind", "ro"]}
ns = [{"type": t} for t in ("pid", "mount", "ipc", "uts")]
ns.append({"type": "network", "path": netns} if netns else {"type": "network"})
print(json.dumps({
  "ociVersion": "1.0.2",
  "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "cwd": "/",
              "args": ["sh", "-c", f"{calls} | sed s/^/init-/; exec sleep 3600"],
              "env": ["PATH=/bin:/usr/bin"], "noNewPrivileges": True},
  "root": {"path": rootfs, "readonly": True},
  "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
             {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]},
             *json.loads(os.environ["OCI_LIB_BINDS"]), bind(os.path.dirname(client)),
             bind("/dev/infiniband/uverbs1")],
  "linux": {"namespaces": ns,
            "devices": [{"path": "/dev/infiniband/uverbs0", "type": "c", "major": os.major(st.st_rdev),
                         "minor": os.minor(st.st_rdev), "fileMode": 0o666}],
            "resources": {"devices": [{"allow": False, "access": "rwm"}]}}}))
PY
}
template "$WORK/ctr.net" >"$WORK/config.plain.json" && template "" >"$WORK/config.rails.json" ||
  die "cannot write the bundle templates"

# --- The agent, its incarnations and the fd-store holder's.
# start_agent: the next incarnation (log agent.N.log), serving once it has re-attached the fd
# store's listeners and swept the rails of containers that are gone.
start_agent() {
  INCARNATION=$((INCARNATION + 1))
  "$GP" agent --socket "$SOCK" --ctl-socket "$CTL" --config "$WORK/agent.json" --fd-store "$STORE" \
    --rail-state-dir "$STATE" >"$WORK/agent.$INCARNATION.log" 2>&1 &
  AGENT_PID=$!
  echo "$INCARNATION $AGENT_PID $(done_count)" >"$WORK/agent.now"
  local i
  for ((i = 0; i < OP_TIMEOUT * 50; i++)); do
    grep -qs "serving " "$WORK/agent.$INCARNATION.log" && return 0
    sleep 0.02
  done
  die "agent $INCARNATION did not start"
}
HOLDER_PID=
note_holder() {
  local p
  p=$(holder_pids)
  [[ -n $p && $p != "$HOLDER_PID" ]] || return 0
  HOLDER_PID=$p HOLDER_INCARNATION=$((HOLDER_INCARNATION + 1))
  echo "$HOLDER_INCARNATION $HOLDER_PID $(done_count)" >"$WORK/holder.now"
}
# usage PID: "rss_kb fds threads" of a process ("- - -" if gone).
usage() {
  local rss
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null) || { echo "- - -"; return; }
  echo "$rss $(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)" \
    "$(find "/proc/$1/task" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)"
}
# settled_usage PID: usage's fields, each the least of three samples 50 ms apart: a request the
# process is serving at that instant (the agent checks on its holder each second, so the holder
# has a connection open for a moment) is not a leak, and a leak stays in all three.
settled_usage() {
  local i
  for i in 1 2 3; do
    usage "$1"
    sleep 0.05
  done | awk '$1 == "-" { gone = 1 }
    { for (f = 1; f <= 3; f++) if (NR == 1 || $f < m[f]) m[f] = $f }
    END { if (gone || !NR) print "- - -"; else print m[1], m[2], m[3] }'
}
ctl_ids() { timeout 5 "$GP" agent ctl --ctl-socket "$CTL" list 2>/dev/null | jq -r .id | sort; }
done_count() { cat "$WORK"/w/*.done 2>/dev/null | wc -l; }

# --- One lifecycle. Each worker runs lifecycles I = w, w+W, ...; a worker below RAIL_SLOTS owns
# rail slot w and gives its containers those rails while both are on the host (an abandoned
# container holds them until a sweep). Its results: one line per lifecycle in w/W.done, failures
# in failures.txt (with the id), the clients' waits in out/ID.*.
# rails_home K: both rails of slot K are on the host.
rails_home() { ip link show "r${1}a" >/dev/null 2>&1 && ip link show "r${1}b" >/dev/null 2>&1; }
# A handover survives a kill: the holder keeps the agent's socket listening (a runtime that
# connects while no agent runs waits in its backlog) and accepts runtimes itself, keeping each
# connection until the agent, which only peeks at it, has read the state whole and put the
# listener in its place. What is left: while no holder runs (killed, not yet replaced) the agent
# accepts on its own, and a kill between such an accept and its put takes the listener with it
# (its trapped calls then fail
# with ENOSYS, never a hang, never a grant: an init so cut fails at once, since runc init's own
# open of its exec fifo is trapped; an exec'd process runs without its devices), and a call the
# killed agent had received is handled again by the next (answered EINTR, so that runc init
# fails, only where it cannot be: received_ids.h). Such a process is counted
# apart, as a casualty of a kill ("KNOWN GAP"), only when the evidence says so: a kill fell
# within its handover, no agent ever logged taking its listener, and its calls failed with
# ENOSYS, nothing else. Anything else is a failure.
# kill_during FROM TO: an agent kill (or its restart) fell between these times (ms).
kill_during() {
  local now
  now=$(ms)
  { cat "$WORK/kills.txt" "$WORK/kill.now" 2>/dev/null || true; } |
    awk -v a="$1" -v b="$2" -v now="$now" 'NF == 1 { $2 = now } $1 <= b && $2 >= a { f = 1 } END { exit !f }'
}
# adopted ID init|exec: an agent logged taking that process's listener (it does so once the
# listener is in the fd store).
adopted() {
  if [[ $2 == init ]]; then
    grep -qsE "container $1: process [0-9]+ \([a-z]+\), rule " "$WORK"/agent.*.log
  else
    grep -qsE "container $1: process [0-9]+ \([a-z]+\) joins its session" "$WORK"/agent.*.log
  fi
}
casualty() { echo "$*" >>"$WORK/casualties.txt"; }
# judge ID WHAT FILE FROM TO: the client's verdict in FILE (lines prefixed WHAT-), its process
# handed over between FROM and TO (ms).
judge() {
  grep -q "^$2-verdict ok$" "$3" && return 0
  if grep -q "^$2-verdict lost-listener$" "$3" && ! grep -q "^$2-open-denied OK" "$3" &&
    ! adopted "$1" "$2" && kill_during "$4" "$5"; then
    casualty "$1: its $2's listener was cut at handover by a kill: its calls failed with ENOSYS"
    return 0
  fi
  failure "$1: its $2's calls: $(grep "^$2-" "$3" | grep -v max-wait | tr '\n' ' ' || echo 'no verdict')"
  return 1
}
# gone ID CFG: the container killed and deleted, whatever state it is in.
gone() {
  rt "$2" kill "$1" KILL >/dev/null 2>&1
  rt "$2" delete -f "$1" >/dev/null 2>&1
}
lifecycle() {
  local i=$1 w=$2 id=$PREFIX$1 cfg=$WORK/runtime.json tmpl=plain rails=- t0 t1 out j abandon=0 tries rc
  if ((w < RAIL_SLOTS)) && [[ ! -s $WORK/w/$w.abandoned ]] && rails_home "$w"; then
    cfg=$WORK/runtime.rails$w.json tmpl=rails rails=r${w}a,r${w}b
    # A rail worker's every third lifecycle, when it has rails, leaves its container killed, not
    # deleted.
    (((i / W) % 3 == 2)) && abandon=1
  fi
  local b=$WORK/b/$id
  mkdir -p "$b" && cp "$WORK/config.$tmpl.json" "$b/config.json"
  out=$WORK/out/$id
  t0=$(ms)
  local tl=$t0
  # A create that finds no agent listening (it is being restarted) is refused by runc; tried
  # again, it must succeed once the next agent serves.
  for tries in 1 2 3 4 5 6; do
    rt "$cfg" create --bundle "$b" "$id" >"$out.init" 2>"$out.create"
    rc=$?
    ((rc == 0)) && break
    ((rc == 124 || rc == 137)) && break
    grep -q "$SOCK" "$out.create" || break
    echo "$id" >>"$WORK/create-retries.txt"
    runc_ delete -f "$id" >/dev/null 2>&1
    sleep 0.3
  done
  if ((rc != 0)); then
    if ((rc == 124 || rc == 137)); then
      failure "$id: HUNG: create did not finish within ${OP_TIMEOUT} s"
    else
      failure "$id: create failed ($tries tries): $(tail -c 300 "$out.create" | tr '\n' ' ')"
    fi
    gone "$id" "$cfg"
    echo "$i $id $(($(ms) - tl)) $rails failed" >>"$WORK/w/$w.done"
    return
  fi
  if ! rt "$cfg" start "$id" >/dev/null 2>"$out.start"; then
    t1=$(ms)
    # runc says either, by whether it saw the init gone before or while it started it.
    if grep -qE "cannot start a container that has stopped|container process is already dead" \
      "$out.start" && kill_during "$t0" "$t1"; then
      casualty "$id: its init died at a kill during its start (its listener cut at handover, or a trapped open of runc init's answered EINTR)"
    else
      failure "$id: start failed: $(tail -c 200 "$out.start" | tr '\n' ' ')"
    fi
    gone "$id" "$cfg"
    echo "$i $id $((t1 - t0)) $rails casualty" >>"$WORK/w/$w.done"
    return
  fi
  for ((j = 0; j < OP_TIMEOUT * 20; j++)); do grep -q "^init-verdict" "$out.init" && break; sleep 0.05; done
  t1=$(ms)
  echo "$id init $t0 $t1" >>"$WORK/w/$w.windows"
  if grep -q "^init-verdict" "$out.init"; then
    judge "$id" init "$out.init" "$t0" "$t1"
  else
    failure "$id: HUNG: its init's calls not answered within ${OP_TIMEOUT} s"
  fi
  if [[ $rails != - ]]; then
    # Seen from here, in its network namespace (a `runc exec` would need the agent).
    nsenter --net="/proc/$(runc_ state "$id" | jq -r .pid)/ns/net" ip -o link show >"$out.links" 2>&1
    grep -q "r${w}a" "$out.links" && grep -q "r${w}b" "$out.links" || failure "$id: its rails are not in it"
  fi
  # An exec that finds no agent listening is refused by runc too: tried again.
  for tries in 1 2 3 4 5 6; do
    t0=$(ms)
    rt "$cfg" exec "$id" sh -c "$CLIENT $ROUNDS /dev/infiniband/uverbs0 /dev/infiniband/uverbs1 | sed s/^/exec-/" \
      >"$out.exec" 2>&1
    rc=$?
    grep -q "exec failed: .*$SOCK" "$out.exec" || break
    echo "$id" >>"$WORK/exec-retries.txt"
    sleep 0.3
  done
  t1=$(ms)
  echo "$id exec $t0 $t1" >>"$WORK/w/$w.windows"
  if ((rc == 124 || rc == 137)); then
    failure "$id: HUNG: its exec did not finish within ${OP_TIMEOUT} s"
  else
    judge "$id" exec "$out.exec" "$t0" "$t1"
  fi
  rt "$cfg" kill "$id" KILL 2>/dev/null
  for ((j = 0; j < OP_TIMEOUT * 20; j++)); do
    [[ $(runc_ state "$id" 2>/dev/null | jq -r .status) == stopped ]] && break
    sleep 0.05
  done
  if ((abandon)); then
    echo "$id" >"$WORK/w/$w.abandoned"
  else
    rt "$cfg" delete "$id" >/dev/null 2>"$out.delete" || failure "$id: delete failed: $(tail -c 200 "$out.delete")"
    [[ $rails == - ]] || rails_home "$w" || failure "$id: its rails are not back on the host after delete"
    rm -rf "$b"
  fi
  echo "$i $id $(($(ms) - tl)) $rails $abandon $(grep -h max-wait-us "$out.init" "$out.exec" | awk '{print $2}' | tr '\n' ' ')" \
    >>"$WORK/w/$w.done"
  # What a container printed is kept only where something went wrong with it.
  grep -qs "^$id:" "$WORK/failures.txt" "$WORK/casualties.txt" || ((abandon)) || rm -f "$out".*
}
# reclaim W: the worker's abandoned container, once a sweep has given its rails back and removed
# its journal: deleted (its poststop finds nothing left to give back); false until then.
reclaim() {
  local id
  id=$(cat "$WORK/w/$1.abandoned")
  rails_home "$1" && [[ ! -e $STATE/$id ]] || return 1
  rt "$WORK/runtime.rails$1.json" delete "$id" >/dev/null 2>"$WORK/out/$id.delete" ||
    failure "$id: delete after the sweep failed: $(tail -c 200 "$WORK/out/$id.delete")"
  grep -h "container $id is gone" "$WORK"/agent.*.log >>"$WORK/swept.txt"
  : >"$WORK/w/$1.abandoned"
  rm -rf "$WORK/b/$id"
}
worker() {
  local w=$1 i
  for ((i = w; i < N; i += W)); do
    echo busy >"$WORK/w/$w.state"
    while [[ -e $WORK/pause ]]; do
      echo idle >"$WORK/w/$w.state"
      sleep 0.05
    done
    [[ -s $WORK/w/$w.abandoned ]] && reclaim "$w"
    lifecycle "$i" "$w"
  done
  echo "done" >"$WORK/w/$w.state"
}

# --- Sampling. sampler: every second, the agent's and the holder's use and the containers the
# agent serves (the curve under load); quiet: the workers paused and the agent left with no
# container (the points the judgement uses).
sampler() {
  local a h live
  while sleep 1; do
    read -r _ a _ <"$WORK/agent.now"
    read -r _ h _ <"$WORK/holder.now"
    live=$(timeout 5 "$GP" agent ctl --ctl-socket "$CTL" list 2>/dev/null | jq -s 'length, ([.[].listeners] | add // 0)' | tr '\n' ' ')
    echo "$(date +%s) $(done_count) $(cut -d' ' -f1 "$WORK/agent.now") $(usage "$a")" \
      "$(cut -d' ' -f1 "$WORK/holder.now") $(usage "$h") $live" \
      "$(find "/proc/$h/fd" -lname 'anon_inode:seccomp notify' 2>/dev/null | wc -l) $(pgrep -fc '^sleep 3600')"
  done >>"$WORK/curve.txt"
}
quiet_point() {
  local w s left
  touch "$WORK/pause"
  for ((s = 0; s < (OP_TIMEOUT * 4 + 10) * 10; s++)); do
    left=0
    for ((w = 0; w < W; w++)); do
      [[ $(cat "$WORK/w/$w.state" 2>/dev/null) == busy ]] && left=1
    done
    ((left)) || break
    sleep 0.1
  done
  ((left)) && failure "quiet point at $(done_count): a worker did not pause"
  # Every container is stopped (or killed, abandoned): the agent must have let them all go.
  for ((s = 0; s < 100; s++)); do [[ -z $(ctl_ids) ]] && break; sleep 0.1; done
  [[ -z $(ctl_ids) ]] && ids_left= || ids_left=$(ctl_ids | tr '\n' ' ')
  [[ -n $ids_left ]] && failure "quiet point at $(done_count): ctl list still names $ids_left"
  # The holder drops an entry when its process exits: give it a moment to see the last ones.
  sleep 0.2
  local a h au hu a0 h0
  read -r _ a a0 <"$WORK/agent.now"
  read -r _ h h0 <"$WORK/holder.now"
  au=$(settled_usage "$a") hu=$(settled_usage "$h")
  read -r -a au <<<"$au"
  read -r -a hu <<<"$hu"
  printf 'quiet  %6s   agent %2s: rss %6s kB, %4s fds, %3s threads   holder %s: rss %6s kB, %4s fds, %s threads\n' \
    "$(done_count)" "$INCARNATION" "${au[@]}" "$HOLDER_INCARNATION" "${hu[@]}" | tee -a "$WORK/quiet.txt"
  echo "$(done_count) $INCARNATION ${au[*]} $HOLDER_INCARNATION ${hu[*]} $a0 $h0" >>"$WORK/quiet.data"
  rm -f "$WORK/pause"
}

# kill_agent: SIGKILL now, the next incarnation started at once; its restart gap (kill to
# serving) and what it took back.
kill_agent() {
  agent_alive  # a crash just before is not taken for this kill
  local t0 gap prev=$INCARNATION held log f
  # The listeners the holder keeps at the kill (one per live process); the next agent takes back
  # those whose process is still alive when it starts.
  held=$(find "/proc/$HOLDER_PID/fd" -lname 'anon_inode:seccomp notify' 2>/dev/null | wc -l)
  # Who the rail journals name, and those processes' start times, for the sweep's check below.
  for f in "$STATE"/*/owner; do
    [[ -f $f ]] && echo "${f%/owner}: $(cat "$f") now $(awk '{sub(/.*\) /, ""); print $20}' "/proc/$(cut -d' ' -f1 "$f")/stat" 2>/dev/null)"
  done >"$WORK/owners.$INCARNATION.txt"
  t0=$(ms)
  echo "$t0" >"$WORK/kill.now"  # a kill under way (kill_during)
  kill -KILL "$AGENT_PID"
  wait "$AGENT_PID" 2>/dev/null
  start_agent
  gap=$(($(ms) - t0))
  echo "$gap" >>"$WORK/gaps.txt"
  echo "$t0 $((t0 + gap))" >>"$WORK/kills.txt"
  rm -f "$WORK/kill.now"
  log=$WORK/agent.$INCARNATION.log
  # The sweep gives back the rails of containers whose process is gone, never of a running one.
  local swept
  for swept in $(sed -n 's/.*container \([^ ]*\) is gone (process.*/\1/p' "$log"); do
    [[ $(runc_ state "$swept" 2>/dev/null | jq -r .status) == running ]] &&
      failure "$swept: the sweep of agent $INCARNATION took back its rails while it runs ($(grep -h "$swept" "$WORK/owners.$prev.txt"))"
  done
  printf 'kill   %6s   agent %2s -> %2s: restart %4d ms; the holder kept %2d listener(s), %2d re-attached, %d rail sweep(s)\n' \
    "$(done_count)" "$prev" "$INCARNATION" "$gap" "$held" "$(grep -c 're-attached from the fd store' "$log")" \
    "$(grep -c 'is gone (process' "$log")" | tee -a "$WORK/events.txt"
  note_holder
}
# agent_alive: an agent that died on its own (a crash: not one of our kills) is a failure, said
# with how it died; the next one is started, as its service manager would.
agent_alive() {
  kill -0 "$AGENT_PID" 2>/dev/null && return 0
  local st=0 prev=$INCARNATION
  wait "$AGENT_PID" 2>/dev/null || st=$?
  failure "agent $prev (pid $AGENT_PID) died on its own at lifecycle $(done_count): exit status $st$( ((st > 128)) && echo " (signal $((st - 128)))"); its log's end: $(tail -n 3 "$WORK/agent.$prev.log" | tr '\n' ' ' | tail -c 400)"
  start_agent
  printf 'crash  %6s   agent %2s -> %2s: exit status %s\n' "$(done_count)" "$prev" "$INCARNATION" "$st" | tee -a "$WORK/events.txt"
  note_holder
}
kill_holder() {
  local p=$HOLDER_PID
  kill -KILL "$p"
  printf 'kill   %6s   fd-store holder %s (pid %s)\n' "$(done_count)" "$HOLDER_INCARNATION" "$p" |
    tee -a "$WORK/events.txt"
  for _ in $(seq 30); do [[ -n $(holder_pids) && $(holder_pids) != "$p" ]] && break; sleep 0.1; done
  note_holder
}

# --- The run.
echo "agent soak: $N lifecycles, $W at once, agent SIGKILLed every $KILL_EVERY (none in the last $CALM), holder at $HOLDER_KILL_AT," \
  "quiet points every $SAMPLE_EVERY (warm-up $WARMUP), $RAIL_SLOTS rail slot(s); $(nproc) CPUs, $(uname -r)," \
  "$(runc --version | head -1)"
start_agent
note_holder
[[ -n $HOLDER_PID ]] || die "no fd-store holder listens on $STORE"
t_start=$(ms)
sampler &
SAMPLER_PID=$!
for ((w = 0; w < W; w++)); do
  worker "$w" &
  WORKER_PIDS+=($!)
done
next_kill=$KILL_EVERY next_quiet=$SAMPLE_EVERY holder_killed=0
while :; do
  alive=0
  for p in "${WORKER_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  ((alive)) || break
  d=$(done_count)
  if ((d >= next_quiet)); then
    quiet_point
    next_quiet=$((next_quiet + SAMPLE_EVERY))
  elif ((d >= next_kill && d < N - CALM)); then
    sleep "0.$((RANDOM % 10))"  # a moment under load, not a quiet one
    kill_agent
    next_kill=$((next_kill + KILL_EVERY))
  elif ((HOLDER_KILL_AT > 0 && !holder_killed && d >= HOLDER_KILL_AT)); then
    kill_holder
    holder_killed=1
  fi
  agent_alive
  sleep 0.1
done
# (A worker that ended early was reaped already by a wait of the loop: bash says so; nothing is
# lost, each worker's verdicts are in its files.)
wait "${WORKER_PIDS[@]}" 2>/dev/null
WORKER_PIDS=()
elapsed=$(($(ms) - t_start))
agent_alive

# --- Survivors: containers alive across one more restart, which also sweeps what is still
# abandoned; then `ctl list` must name exactly the running containers, and each is served.
SURV=$((W < 8 ? W : 8))
for ((s = 0; s < SURV; s++)); do
  id=${PREFIX}survivor-$s
  mkdir -p "$WORK/b/$id" && cp "$WORK/config.plain.json" "$WORK/b/$id/config.json"
  rt "$WORK/runtime.json" create --bundle "$WORK/b/$id" "$id" >"$WORK/out/$id.init" 2>&1 &&
    rt "$WORK/runtime.json" start "$id" || die "survivor $id did not start"
done
for ((s = 0; s < SURV; s++)); do
  for ((j = 0; j < 200; j++)); do grep -q "^init-verdict" "$WORK/out/${PREFIX}survivor-$s.init" && break; sleep 0.05; done
done
kill_agent
running=$(runc_ list -f json | jq -r '.[] | select(.status == "running") | .id' | sort)
[[ $(ctl_ids) == "$running" ]] ||
  failure "after the last restart ctl list names [$(ctl_ids | tr '\n' ' ')], the running containers are [$(echo "$running" | tr '\n' ' ')]"
timeout 5 "$GP" agent ctl --ctl-socket "$CTL" list | jq -e -s 'all(.[]; .grants == ["uverbs0"])' >/dev/null ||
  failure "after the last restart a container has grants other than [uverbs0]"
for ((s = 0; s < SURV; s++)); do
  id=${PREFIX}survivor-$s
  rt "$WORK/runtime.json" exec "$id" sh -c "$CLIENT $ROUNDS /dev/infiniband/uverbs0 /dev/infiniband/uverbs1 | sed s/^/exec-/" \
    >"$WORK/out/$id.exec" 2>&1
  judge "$id" exec "$WORK/out/$id.exec"
  rt "$WORK/runtime.json" delete -f "$id" >/dev/null 2>&1 || failure "$id: delete -f failed"
done
for ((w = 0; w < RAIL_SLOTS; w++)); do
  [[ -s $WORK/w/$w.abandoned ]] && { reclaim "$w" || failure "$(cat "$WORK/w/$w.abandoned"): its rails were not swept back"; }
done
for ((s = 0; s < 50; s++)); do [[ -z $(ctl_ids) ]] && break; sleep 0.1; done
[[ -z $(ctl_ids) ]] || failure "at the end ctl list still names $(ctl_ids | tr '\n' ' ')"
[[ -z $(runc_ list -q) ]] || failure "at the end runc still lists $(runc_ list -q | tr '\n' ' ')"
[[ -z $(ls -A "$STATE" 2>/dev/null) ]] || failure "at the end the rail state dir holds $(ls -A "$STATE" | tr '\n' ' ')"
host_net >"$WORK/net.after"
diff -u "$WORK/net.before" "$WORK/net.after" >"$WORK/net.diff" ||
  failure "at the end the host's network differs from before: $(head -c 600 "$WORK/net.diff")"
quiet_point
kill "$SAMPLER_PID" 2>/dev/null
wait "$SAMPLER_PID" 2>/dev/null
SAMPLER_PID=

# --- Report.
count() { # lines of a file that may not exist
  local n=0
  [[ -f $1 ]] && n=$(grep -c . "$1")
  echo "$n"
}
done_n=$(done_count)
echo "--- $done_n lifecycles in $((elapsed / 1000)) s ($(awk -v n="$done_n" -v t="$elapsed" 'BEGIN {printf "%.1f", n * 1000 / t}')/s)," \
  "$(awk '$4 != "-"' "$WORK"/w/*.done | wc -l) with rails ($(count "$WORK/swept.txt") left to the sweep)," \
  "$(count "$WORK/create-retries.txt") create(s) and $(count "$WORK/exec-retries.txt") exec(s) retried while no agent listened"
awk '{print $3}' "$WORK"/w/*.done | sort -n | awk '{a[NR] = $1} END {printf "lifecycle wall time: median %d ms, p99 %d ms, max %d ms\n", a[int((NR + 1) / 2)], a[int(NR * 0.99)], a[NR]}'
maxwait=$(awk '{for (f = 6; f <= NF; f++) if ($f > m) m = $f} END {print m + 0}' "$WORK"/w/*.done)
maxgap=$(sort -n "$WORK/gaps.txt" | tail -1)
echo "restarts: $(grep -c . "$WORK/gaps.txt"), gap median $(sort -n "$WORK/gaps.txt" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}') ms, max $maxgap ms;" \
  "longest wait of any container's call: $((maxwait / 1000)) ms"
# A call waits at most for the restart, plus the scheduler's share of two CPUs among 50 containers.
((maxwait / 1000 <= maxgap + 3000)) || failure "a call waited $((maxwait / 1000)) ms, longer than the longest restart ($maxgap ms) by more than 3 s"
# The judgement: per process, quiet samples after its warm-up against the first of them.
echo "resources at quiet points after warm-up (each incarnation with 3 or more such samples against its own first, tolerance $TOL %):"
awk -v warm="$WARMUP" -v tol="$TOL" '
  # fields: done agent_inc rss fds thr holder_inc hrss hfds hthr agent_start holder_start (the
  # lifecycles done when each was started)
  function judge(who, inc, d, rss, fds, thr, start,   k) {
    k = who " " inc
    if (d - start < warm || rss == "-") return
    if (!(k in base)) { base[k] = rss " " fds " " thr; order[++n] = k; last[k] = base[k]; cnt[k] = 1; return }
    split(base[k], b, " ")
    last[k] = rss " " fds " " thr; cnt[k]++
    if (rss > b[1] * (1 + tol / 100) || fds > b[2] * (1 + tol / 100) || thr > b[3] * (1 + tol / 100)) bad[k] = bad[k] " at " d
  }
  { judge("agent", $2, $1, $3, $4, $5, $10); judge("holder", $6, $1, $7, $8, $9, $11) }
  END {
    for (i = 1; i <= n; i++) {
      k = order[i]; split(base[k], b, " "); split(last[k], l, " ")
      printf "  %-10s samples %2d  rss %6d -> %6d kB  fds %4d -> %4d  threads %3d -> %3d  %s\n", k, cnt[k],
        b[1], l[1], b[2], l[2], b[3], l[3], cnt[k] < 3 ? "(too short to judge)" : (k in bad ? "GREW" bad[k] : "within")
      if (cnt[k] < 3) continue
      if (k in bad) fails++
      judged++
    }
    if (!judged) print "  no process lived long enough after its warm-up to be judged"
    exit fails || !judged
  }' "$WORK/quiet.data" || failure "resource use grew (or nothing could be judged): see above"
awk '$4 != "-" { if ($4 > r) r = $4; if ($5 > f) f = $5; if ($6 > t) t = $6 } $11 > lv { lv = $11 }
  END { printf "under load (each second): agent rss peak %d kB, fds peak %d, threads peak %d, up to %d containers served at once\n", r, f, t, lv }' \
  "$WORK/curve.txt"
if [[ -s $WORK/casualties.txt ]]; then
  echo "KNOWN GAP: $(grep -c . "$WORK/casualties.txt") process(es) whose listener handover a kill cut (see the top of this script):"
  sed 's/^/  /' "$WORK/casualties.txt"
  # The evidence for the first few: what the agents said of the container and its windows; and
  # what they said of handovers they could not read (a line names the runtime's pid, not yet the
  # container).
  for id in $(grep -o "^${PREFIX}[^:]*" "$WORK/casualties.txt" | sort -u | head -n 5); do
    echo "--- $id: $(cat "$WORK"/w/*.windows | grep -F "$id " | cut -d' ' -f2- | tr '\n' ' ')"
    grep -hE "(container |\[)${id}([]: ]|$)" "$WORK"/agent.*.log | grep -v "denied open" | head -n 10 | sed 's/^/  /'
  done
  echo "--- handovers not read: $(cat "$WORK"/agent.*.log | grep -cE "agent: runtime pid [0-9]+: ")"
  grep -hE "agent: runtime pid [0-9]+: " "$WORK"/agent.*.log | head -n 10 | sed 's/^/  /'
fi
if [[ -s $WORK/failures.txt ]]; then
  echo "FAIL: $(grep -c . "$WORK/failures.txt") failure(s):"
  head -n 30 "$WORK/failures.txt" | sed 's/^/  /'
  # The evidence for the first few: what the agents said of the container, its exec's window and
  # the kills (ms).
  for id in $(grep -o "^${PREFIX}[^:]*" "$WORK/failures.txt" | sort -u | head -n 5); do
    echo "--- $id: $(cat "$WORK"/w/*.windows | grep -F "$id " | cut -d' ' -f2- | tr '\n' ' ')"
    grep -hE "(container |\[)${id}([]: ]|$)" "$WORK"/agent.*.log | grep -v "denied open" | head -n 10 | sed 's/^/  /'
  done
  echo "--- kills (ms): $(tr '\n' ' ' <"$WORK/kills.txt")"
  exit 1
fi
echo "PASS: $done_n lifecycles through the shim and the agent, $((INCARNATION - 1)) agent SIGKILLs and" \
  "$((HOLDER_INCARNATION - 1)) of the holder: every container's calls answered, none hung, none gained a grant," \
  "ctl list matched the running containers, every rail back on the host"
