#!/usr/bin/env bash
# The agent run with --fd-store, SIGKILLed again and again under traffic: two containers with
# different grants each run chaos_loop as their init (threads issuing trapped opens and uverbs
# ioctls on their granted stand-in node, and opens of an ungranted one, as fast as they can) while
# short `runc exec`s come and go in both; the agent is killed at random moments and restarted each
# time, re-attaching from the fd store. MODE oci: the containers are real, one runc's and one
# crun's (Debian's), with their own pid namespaces and profiles from `gdrproxy oci seccomp`;
# MODE runtime_client: runtime_client plays runc (no runtime needed). The idea not to miss: a
# call the killed agent had received but not answered must still be answered (the holder keeps
# the listener open, so the kernel never fails it), and no container may be lost from the store
# on the way. So at the end every loop finishes a bounded number of rounds within a deadline (a
# thread that does not is reported with its wchan), and each container's last round, made after
# the last restart, has its granted call served and its ungranted one refused.
# Usage: chaos_test.sh GDRPROXY RUNTIME_CLIENT CHAOS_LOOP ATTACK_CLIENT MODE   (root; 77 = skipped)
# GDRPROXY_CHAOS_KILLS sets the number of kills (20).
set -uo pipefail
GP=$(realpath "$1")
TK=$(dirname "$GP")/gdrproxy-testkit  # the tests' tool: stand-in devices, exercisers
RC=$(realpath "$2")
LOOP=$(realpath "$3")
A=$(realpath "$4")
BUNDLE=$(realpath "$(dirname "$0")/oci_bundle.py")  # a runc/crun config.json
MODE=$5
[[ $EUID == 0 ]] || { echo "SKIP: needs root"; exit 77; }
if [[ $MODE == oci ]]; then
  for rt in runc crun; do
    command -v $rt >/dev/null || { echo "SKIP: $rt is not installed (scripts/setup.sh installs it)"; exit 77; }
  done
fi
# Everything runs inside one stand-in /dev (a private mount namespace), agent and clients alike.
if [[ -z ${GDRPROXY_CHAOS_TEST_INNER:-} ]]; then
  GDRPROXY_CHAOS_TEST_INNER=1 exec timeout -k 5 150 "$TK" standin "$0" "$@"
fi
# crun refuses a hybrid cgroup hierarchy: inside this private mount namespace /sys/fs/cgroup
# becomes the plain v2 one (as in oci_runtime_test.sh).
if [[ $MODE == oci && $(stat -f -c %T /sys/fs/cgroup) != cgroup2fs ]]; then
  mount -t cgroup2 none /sys/fs/cgroup || { echo "SKIP: cannot mount cgroup2 here"; exit 77; }
fi
KILLS=${GDRPROXY_CHAOS_KILLS:-20}
THREADS=2         # loop threads per container
FINAL=20          # rounds each thread makes once told to stop
DEADLINE_S=15     # for those rounds, after the last restart
WORK=$(mktemp -d /tmp/gdrproxy-chaos.XXXXXX)
chmod 755 "$WORK"
SOCK=$WORK/run/agent.sock
CTL=$WORK/run/agent.ctl
STORE=$WORK/run/fds.sock
AGENT_PID= HOLDER_PID=
ID_A=chaos-a-$$ ID_B=chaos-b-$$
declare -A INIT EXECS
# holder_pids: the processes listening on this test's fd-store socket.
holder_pids() { ss -xlpH 2>/dev/null | grep -F -- "$STORE " | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u; }
cleanup() {
  local p
  exec 2>/dev/null  # no job notices for what is killed here
  for p in ${INIT[@]+"${INIT[@]}"} ${EXECS[@]+"${EXECS[@]}"} $AGENT_PID $(holder_pids); do
    kill -KILL "$p" 2>/dev/null
  done
  wait 2>/dev/null
  if [[ $MODE == oci ]]; then
    runc --root "$WORK/runc" delete -f "$ID_A" >/dev/null 2>&1
    crun --root "$WORK/crun" delete -f "$ID_B" >/dev/null 2>&1
    umount -R "$WORK"/bundles/*/rootfs 2>/dev/null
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
FAILED=0
fail_later() { echo "FAIL: $*"; FAILED=1; }
fail() { echo "FAIL: $*"; tail -n 20 "$WORK"/agent.*.log 2>/dev/null | sed 's/^/  [agent] /'; exit 1; }

mkdir -p "$WORK/run" "$WORK/bundles" "$WORK/share"
STOP=$WORK/share/stop
cat >"$WORK/agent.json" <<'EOF'
{"version": 1,
 "containers": [
   {"match": {"id": "chaos-a-*"}, "grants": ["uverbs0"]},
   {"match": {"id": "chaos-b-*"}, "grants": ["uverbs1"]}]}
EOF
# start_agent N: the Nth agent (log agent.N.log), serving once it has re-attached the fd store.
start_agent() {
  rm -f "$SOCK" "$CTL"
  "$GP" agent --socket "$SOCK" --ctl-socket "$CTL" --config "$WORK/agent.json" \
    --fd-store "$STORE" >"$WORK/agent.$1.log" 2>&1 &
  AGENT_PID=$!
  local i
  for i in $(seq 200); do grep -qs "serving " "$WORK/agent.$1.log" && return 0; sleep 0.05; done
  fail "agent $1 did not start"
}
# bundle_for ID: the container's bundle; config.json hands the listener to the agent's socket.
# MODE oci: a real bundle whose rootfs is the host's /usr and /etc (read-only binds), the build
# tree and the shared directory, with both stand-in uverbs nodes (the device cgroup allows both:
# the agent is what refuses), running chaos_loop as its init.
bundle_for() {
  local b=$WORK/bundles/$1
  [[ -f $b/config.json ]] && { echo "$b"; return; }
  mkdir -p "$b"
  if [[ $MODE != oci ]]; then
    jq -n --arg s "$SOCK" '{ociVersion: "1.2.0", linux: {seccomp: {defaultAction: "SCMP_ACT_ALLOW", listenerPath: $s}}}' \
      >"$b/config.json"
    echo "$b"
    return
  fi
  mkdir -p "$b/rootfs"
  (cd "$b/rootfs" && mkdir -p usr etc proc dev tmp && ln -s usr/bin bin && ln -s usr/lib lib &&
    ln -s usr/lib64 lib64 && ln -s usr/sbin sbin)
  "$GP" oci seccomp --listener "$SOCK" --metadata "tenant=$1" --runtime "$3" >"$b/seccomp.json" ||
    fail "gdrproxy oci seccomp failed"
  # The loop opens the granted node and then the other one, which only the agent refuses.
  local denied=/dev/infiniband/uverbs0
  [[ $2 == uverbs0 ]] && denied=/dev/infiniband/uverbs1
  "$BUNDLE" "$b/config.json" --id "$1" --seccomp "$b/seccomp.json" \
    --device /dev/infiniband/uverbs0 --device /dev/infiniband/uverbs1 --cgroup-allow \
    --bind "${A%/*}" --bind "${LOOP%/*}" --bind-rw "$WORK/share:$WORK/share" -- \
    "$LOOP" $THREADS "$STOP" $FINAL "/dev/infiniband/$2" "$denied" || fail "bundle $1"
  echo "$b"
}
# start_container a|b ID GRANTED DENIED: the container's init is chaos_loop (INIT[a|b], output
# in a|b.out); a is runc's, b crun's.
start_container() {
  local rt=runc
  [[ $1 == b ]] && rt=crun
  if [[ $MODE == oci ]]; then
    bundle_for "$2" "$3" $rt >/dev/null
    if [[ $rt == runc ]]; then
      runc --root "$WORK/runc" run --bundle "$WORK/bundles/$2" "$2" >"$WORK/$1.out" 2>&1 &
    else
      # No cgroup manager: crun raises RLIMIT_MEMLOCK for its device program, which needs
      # CAP_SYS_RESOURCE (see oci_runtime_test.sh).
      crun --root "$WORK/crun" --cgroup-manager=disabled run --bundle "$WORK/bundles/$2" "$2" >"$WORK/$1.out" 2>&1 &
    fi
  else
    "$RC" "$SOCK" "$2" runc-init --bundle "$(bundle_for "$2")" -- \
      "$LOOP" $THREADS "$STOP" $FINAL "/dev/infiniband/$3" "/dev/infiniband/$4" >"$WORK/$1.out" 2>&1 &
  fi
  INIT[$1]=$!
}
# exec_once ID DEVICE: one `runc exec` (crun's for b) into ID, opening DEVICE once.
exec_once() {
  local -a cmd=("$A" open "/dev/infiniband/$2" rdwr syscall)
  if [[ $MODE != oci ]]; then
    timeout -k 1 8 "$RC" "$SOCK" "$1" runc-exec --bundle "$(bundle_for "$1")" -- "${cmd[@]}"
  elif [[ $1 == "$ID_A" ]]; then
    timeout -k 1 8 runc --root "$WORK/runc" exec "$1" "${cmd[@]}"
  else
    timeout -k 1 8 crun --root "$WORK/crun" --cgroup-manager=disabled exec "$1" "${cmd[@]}"
  fi
}
# exec_loop ID DEVICE: execs into ID until the stop file, one exit code a line; an exec that the
# agent was not there to take fails, and that is fine, but none may hang.
exec_loop() {
  local n=0
  while [[ ! -e $STOP ]] && ((n < 500)); do
    exec_once "$1" "$2" >/dev/null 2>&1
    echo $?
    ((n++))
    sleep 0.1
  done >"$WORK/$1.execs"
}

start_agent 0
HOLDER_PID=$(holder_pids)
[[ -n $HOLDER_PID ]] || fail "no process listens on the fd store $STORE"
start_container a "$ID_A" uverbs0 uverbs1
start_container b "$ID_B" uverbs1 uverbs0
for i in $(seq 100); do
  grep -q "container $ID_A: process" "$WORK/agent.0.log" && grep -q "container $ID_B: process" "$WORK/agent.0.log" && break
  sleep 0.05
done
grep -q "container $ID_B: process" "$WORK/agent.0.log" && grep -q "container $ID_A: process" "$WORK/agent.0.log" ||
  fail "the two containers were not taken"
exec_loop "$ID_A" uverbs0 &
EXECS[a]=$!
exec_loop "$ID_B" uverbs1 &
EXECS[b]=$!

# The chaos: each agent serves for a random 100-599 ms, is SIGKILLed, and the next one starts.
t0=$SECONDS
for ((k = 1; k <= KILLS; k++)); do
  sleep "$(printf '0.%03d' $((100 + RANDOM % 500)))"
  kill -KILL "$AGENT_PID"
  wait "$AGENT_PID" 2>/dev/null
  start_agent $k
done
echo "killed the agent $KILLS times in $((SECONDS - t0)) s; agent $KILLS serves"

# Every loop now makes its last rounds, and every process must end within the deadline.
touch "$STOP"
for ((i = 0; i < DEADLINE_S * 10; i++)); do
  alive=0
  for p in "${INIT[@]}" "${EXECS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  ((alive)) || break
  sleep 0.1
done
# blocked_threads PID: each thread of PID and its descendants, with where it waits.
blocked_threads() {
  local p t
  for t in /proc/"$1"/task/*; do
    [[ -r $t/wchan ]] && echo "    pid $1 tid ${t##*/} ($(cat "$t/comm" 2>/dev/null)): wchan $(cat "$t/wchan" 2>/dev/null)"
  done
  for p in $(pgrep -P "$1"); do blocked_threads "$p"; done
}
for c in a b; do
  id=chaos-$c-$$
  if kill -0 "${INIT[$c]}" 2>/dev/null; then
    fail_later "container $id's loop did not finish within ${DEADLINE_S} s of the last restart; its threads:"
    blocked_threads "${INIT[$c]}"
  else
    wait "${INIT[$c]}"
    rc=$?
    ((rc == 0)) || fail_later "container $id's loop exited $rc"
  fi
  if kill -0 "${EXECS[$c]}" 2>/dev/null; then
    fail_later "container $id's exec loop did not finish"
    blocked_threads "${EXECS[$c]}"
  fi
  echo "container $id: $(grep -c . "$WORK/$id.execs" 2>/dev/null) execs, exit codes:" \
    "$(sort "$WORK/$id.execs" 2>/dev/null | uniq -c | awk '{printf "%s x%s  ", $2, $1}')"
  grep -qx 124 "$WORK/$id.execs" 2>/dev/null && fail_later "an exec'd process in $id hung until its timeout"
  sed "s/^/  $id: /" "$WORK/$c.out"
done

# What each container's calls got: the expected outcome, or an error only where a kill caught
# the call in flight (one call per thread per kill at most).
check_container() {
  local c=$1 granted_ok=$2 id=chaos-$1-$$ out=$WORK/$1.out odd
  grep -q "^rounds " "$out" || return
  odd=$(awk -v ok="$granted_ok" '
    $1 == "open-granted" && $2 != "OK" { n += $3 }
    $1 == "ioctl-granted" && $2 !~ ok { n += $3 }
    $1 == "open-denied" && $2 != "EACCES" { n += $3 }
    END { print n + 0 }' "$out")
  echo "container $id: $odd calls with an outcome other than the expected one"
  ((odd <= KILLS * THREADS)) || fail_later "container $id: $odd calls failed, more than the $((KILLS * THREADS)) a kill can catch in flight"
  # Served after the last restart: each thread's last round got its granted call and was refused
  # the ungranted one (ENOSYS there means the container was lost from the fd store).
  grep "^final " "$out" | grep -Evq "open=OK ioctl=$granted_ok denied=EACCES$" &&
    fail_later "container $id is not served after the last restart: $(grep '^final ' "$out" | tr '\n' ';')"
}
for c in a b; do check_container $c 'E(NOTTY|INVAL)'; done
[[ $(holder_pids) == "$HOLDER_PID" ]] || fail_later "the fd store's holder changed: pid $HOLDER_PID, now '$(holder_pids)'"
if ((FAILED)); then
  echo "--- the last agent's log:"
  sed 's/^/  [agent] /' "$WORK/agent.$KILLS.log"
  exit 1
fi
echo "PASS: $KILLS SIGKILLs of the agent under traffic from two containers: no call left blocked, both containers served after the last restart"
