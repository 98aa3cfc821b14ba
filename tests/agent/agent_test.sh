#!/usr/bin/env bash
# `gdrproxy agent` with runtime_client playing runc and crun, on stand-in device nodes. The idea
# not to miss: two containers served by one agent at the same time get exactly what the agent's
# config gives each (never what their annotations ask for), their calls land in their own
# traces, a process `runc exec`ed into a container joins that container's session, only root
# may hand over a listener, a state the agent cannot tie to its bundle and pid namespace is
# refused, pidfd_getfd is brokered within a container or its operator-declared group only, a
# dead agent leaves callers with ENOSYS, never a hang, and with the fd store a restarted agent
# takes back each live process (never a reused pid) and answers the calls the killed one held.
# Usage: agent_test.sh GDRPROXY RUNTIME_CLIENT ATTACK_CLIENT CASE   (needs root; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
TK=$(dirname "$GP")/gdrproxy-testkit  # the tests' tool: stand-in devices, exercisers
RC=$(realpath "$2")
A=$(realpath "$3")
CASE=$4
[[ $EUID == 0 ]] || { echo "SKIP [$CASE]: needs root"; exit 77; }
# Everything runs inside one stand-in /dev (a private mount namespace), agent and clients alike.
if [[ -z ${GDRPROXY_AGENT_TEST_INNER:-} ]]; then
  # The hung FUSE filesystem is mounted out here: the stand-in /dev has no /dev/fuse (it stands
  # in for rdma_cm there); the mount is copied into the stand-in's mount namespace.
  if [[ $CASE == hung_* ]]; then
    fuse=$(dirname "$RC")/hang_fuse
    [[ -x $fuse ]] || { echo "SKIP [$CASE]: no hang_fuse (libfuse3-dev missing)"; exit 77; }
    mnt=$(mktemp -d /tmp/gdrproxy-hang.XXXXXX)
    "$fuse" "$mnt" 2>"$mnt.log" &
    fpid=$!
    for i in $(seq 100); do grep -q " $mnt fuse" /proc/mounts && break; sleep 0.05; done
    grep -q " $mnt fuse" /proc/mounts || { echo "FAIL [$CASE]: FUSE did not mount: $(cat "$mnt.log")"; exit 1; }
    GDRPROXY_AGENT_TEST_INNER=1 HANG_MNT=$mnt timeout -k 5 120 "$TK" standin "$0" "$@"
    rc=$?
    umount -l "$mnt"
    kill -KILL $fpid 2>/dev/null
    rmdir "$mnt"
    rm -f "$mnt.log"
    exit $rc
  fi
  GDRPROXY_AGENT_TEST_INNER=1 exec timeout -k 5 120 "$TK" standin "$0" "$@"
fi
WORK=$(mktemp -d /tmp/gdrproxy-agent.XXXXXX)
AGENT_PID=
trap '[[ -n $AGENT_PID ]] && kill -KILL $AGENT_PID 2>/dev/null; rm -rf "$WORK"' EXIT
fail() {
  echo "FAIL [$CASE]: $*" >&2
  local f
  # A killed agent's log is kept as agent.N.log (kill_and_restart_agent).
  for f in "$WORK"/agent.[0-9]*.log "$WORK/agent.log"; do
    [[ -f $f ]] && sed "s/^/  [$(basename "$f" .log)] /" "$f" >&2
  done
  exit 1
}
expect_in() { grep -qF -- "$2" "$1" || { echo "--- $1:"; cat "$1"; fail "expected '$2' in $1"; }; }
expect_not_in() { ! grep -qF -- "$2" "$1" || { echo "--- $1:"; cat "$1"; fail "did not expect '$2' in $1"; }; }
expect_line() {
  local line
  line=$(grep -m1 -F -- "$2" "$1") || { echo "--- $1:"; cat "$1"; fail "no '$2' line in $1"; }
  [[ $line =~ $3 ]] || { echo "--- $1:"; cat "$1"; fail "'$line' does not match /$3/"; }
}

SOCK=$WORK/run/agent.sock
CTL=$WORK/run/agent.ctl
mkdir -p "$WORK/traces"
cat >"$WORK/agent.json" <<'EOF'
{"version": 1,
 "containers": [
   {"match": {"id": "team-a-*"}, "grants": ["uverbs0"], "trace": true},
   {"match": {"id": "team-b-*", "metadata": "job=42"}, "grants": ["uverbs1", "rdma_cm"], "trace": true},
   {"match": {"id": "solo-*"}, "broker_pidfd_getfd": true, "trace": true},
   {"match": {"id": "meta-*"}, "grants": ["uverbs0", "rdma_cm"], "grants_from_metadata": true},
   {"match": {"id": "job7-*"}, "broker_pidfd_getfd": true, "pidfd_getfd_group": "job7", "trace": true}
 ]}
EOF
start_agent() {
  "$GP" agent --socket "$SOCK" --ctl-socket "$CTL" --config "$WORK/agent.json" \
    --trace-dir "$WORK/traces" "$@" >"$WORK/agent.log" 2>&1 &
  AGENT_PID=$!
  local i
  for i in $(seq 100); do [[ -S $SOCK && -S $CTL ]] && return 0; sleep 0.05; done
  fail "the agent did not start"
}
# bundle_for ID [METADATA]: the container's bundle, as its user made it: config.json hands the
# listener to the agent's socket with that metadata (made once: `runc exec` reuses it).
bundle_for() {
  local b=$WORK/bundles/$1
  if [[ ! -f $b/config.json ]]; then
    mkdir -p "$b"
    jq -n --arg s "$SOCK" --arg m "${2:-}" \
      '{ociVersion: "1.2.0", linux: {seccomp: {defaultAction: "SCMP_ACT_ALLOW", listenerPath: $s, listenerMetadata: $m}}}' \
      >"$b/config.json"
  fi
  echo "$b"
}
# in_container ID STYLE [--metadata M] [runtime_client options] -- CMD...: CMD as a container's
# process, from the container's bundle.
in_container() {
  local id=$1 style=$2 meta='' a
  shift 2
  local -a rest=("$@")
  for ((a = 0; a < ${#rest[@]}; a++)); do
    [[ ${rest[a]} == -- ]] && break
    [[ ${rest[a]} == --metadata ]] && meta=${rest[a + 1]}
  done
  "$RC" "$SOCK" "$id" "$style" --bundle "$(bundle_for "$id" "$meta")" "$@"
}
probe() { echo "$A open /dev/infiniband/$1 rdwr syscall | sed s/^/$1-/"; }
# has TRACE DEVICE DECISION: a record of that device with that decision.
has() { jq -e -s --arg d "$2" --arg x "$3" 'any(.[]; .device == $d and .decision == $x)' "$1" >/dev/null; }

case_two_containers_kept_apart() {
  # Two containers at once, as runc and as crun: each reaches its own grant only, whatever its
  # annotations say, and each one's calls are in its own trace.
  start_agent
  in_container team-a-1 runc-init -- sh -c "$(probe uverbs0); $(probe uverbs1); sleep 0.5" >"$WORK/a.out" 2>&1 &
  local a=$!
  in_container team-b-1 crun --metadata job=42 -- sh -c "$(probe uverbs0); $(probe uverbs1); sleep 0.5" >"$WORK/b.out" 2>&1
  wait $a || fail "container a exit $?"
  expect_line "$WORK/a.out" "uverbs0-open" " OK ioctl=E(NOTTY|INVAL)"
  expect_line "$WORK/a.out" "uverbs1-open" " ERR EACCES$"
  expect_line "$WORK/b.out" "uverbs1-open" " OK ioctl=E(NOTTY|INVAL)"
  expect_line "$WORK/b.out" "uverbs0-open" " ERR EACCES$"
  local ta=$WORK/traces/team-a-1.jsonl tb=$WORK/traces/team-b-1.jsonl
  for i in $(seq 50); do grep -q "team-b-1 ended" "$WORK/agent.log" && grep -q "team-a-1 ended" "$WORK/agent.log" && break; sleep 0.1; done
  [[ -s $ta && -s $tb ]] || fail "per-container traces missing: $(ls "$WORK/traces")"
  has "$ta" uverbs0 allow || { cat "$ta"; fail "team-a-1's trace lacks its granted open"; }
  has "$ta" uverbs1 deny || { cat "$ta"; fail "team-a-1's trace lacks its denial"; }
  has "$tb" uverbs1 allow || { cat "$tb"; fail "team-b-1's trace lacks its granted open"; }
  has "$tb" uverbs0 deny || { cat "$tb"; fail "team-b-1's trace lacks its denial"; }
  ! has "$ta" uverbs0 deny || fail "team-a-1's trace holds team-b-1's call"
  ! has "$tb" uverbs1 deny || fail "team-b-1's trace holds team-a-1's call"
  # And each one's results reached its own records (a result goes to its session by the id in
  # its registration's cookie): an allowed call that returned has its result.
  local t
  for t in "$ta" "$tb"; do
    jq -e -s 'any(.[]; .decision == "allow")' "$t" >/dev/null ||
      { cat "$t"; fail "no allowed call in $t"; }
    ! jq -e -s 'any(.[]; .decision == "allow" and .result == null)' "$t" >/dev/null ||
      { cat "$t"; fail "$t: an allowed call that returned is recorded without its result"; }
  done
  expect_in "$WORK/agent.log" "container team-a-1: process"
  expect_in "$WORK/agent.log" "rule containers[0], grants [uverbs0]"
  expect_in "$WORK/agent.log" "rule containers[1], grants [uverbs1,rdma_cm]"
}

case_last_calls_keep_their_results() {
  # A container that exits right after its last call: the call's result is still in the
  # observer's ring (drained every few milliseconds) when the session ends, and must reach its
  # record, not be written as never returned.
  start_agent
  local i t
  for i in 1 2 3 4 5; do
    # Well-formed uverbs ioctls (the stand-in answers ENOTTY), the last one right before exit.
    in_container "team-a-last$i" runc-init -- "$TK" exercise uverbs /dev/infiniband/uverbs0 >"$WORK/l$i.out" 2>&1 ||
      { rc=$?; cat "$WORK/l$i.out"; fail "exercise exit $rc"; }
  done
  for i in 1 2 3 4 5; do
    t=$WORK/traces/team-a-last$i.jsonl
    for _ in $(seq 50); do grep -q "team-a-last$i ended" "$WORK/agent.log" && break; sleep 0.1; done
    jq -e -s 'any(.[]; .syscall == "ioctl")' "$t" >/dev/null || { cat "$t"; fail "no ioctl traced for team-a-last$i"; }
    ! jq -e -s 'any(.[]; .syscall == "ioctl" and .result == null)' "$t" >/dev/null ||
      { cat "$t"; fail "team-a-last$i: an ioctl that returned is recorded without its result"; }
  done
}

case_unmatched_container_gets_no_device() {
  # No rule matches (and team-b without its metadata does not match either): no device, even
  # though the annotations ask for everything.
  start_agent
  in_container stranger runc-init -- sh -c "$(probe uverbs0)" >"$WORK/s.out" 2>&1 || fail "exit $?"
  in_container team-b-2 runc-init -- sh -c "$(probe uverbs1)" >"$WORK/b.out" 2>&1 || fail "exit $?"
  expect_line "$WORK/s.out" "uverbs0-open" " ERR EACCES$"
  expect_line "$WORK/b.out" "uverbs1-open" " ERR EACCES$"
  expect_in "$WORK/agent.log" "container stranger: process"
  expect_in "$WORK/agent.log" "rule default, grants []"
}

case_exec_joins_its_container() {
  # runc exec: a second process with its own listener joins the running container's session
  # (its grants, its counters), and `agent ctl` lists one container with two listeners.
  start_agent
  in_container team-a-2 runc-init -- sleep 3 >"$WORK/init.out" 2>&1 &
  local init=$!
  for i in $(seq 50); do grep -q "container team-a-2: process" "$WORK/agent.log" && break; sleep 0.1; done
  in_container team-a-2 runc-exec -- sh -c "$(probe uverbs0); $(probe uverbs1)" >"$WORK/exec.out" 2>&1 || fail "exec exit $?"
  "$GP" agent ctl --ctl-socket "$CTL" list >"$WORK/list.out" || fail "ctl list failed"
  "$GP" agent ctl --ctl-socket "$CTL" stats >"$WORK/stats.out" || fail "ctl stats failed"
  expect_line "$WORK/exec.out" "uverbs0-open" " OK ioctl="
  expect_line "$WORK/exec.out" "uverbs1-open" " ERR EACCES$"
  expect_in "$WORK/agent.log" "container team-a-2: process"
  expect_in "$WORK/agent.log" "(running) joins its session (2 listeners)"
  [[ $(grep -c '"id":"team-a-2"' "$WORK/list.out") == 1 ]] || { cat "$WORK/list.out"; fail "not one container listed"; }
  expect_in "$WORK/list.out" '"listeners":2'
  expect_in "$WORK/stats.out" '"id":"team-a-2"'
  expect_in "$WORK/stats.out" '"opens":'
  expect_in "$WORK/stats.out" '"us_per_ioctl_phases":{"answer":'
  kill $init 2>/dev/null
  wait $init
}

case_crun_exec_bound_to_its_first_caller() {
  # crun 1.8's exec names no process ("pid": 0): the agent binds that listener to the first caller
  # received on it, checked to be in the container's pid namespace and cgroup, and serves it as
  # the container's (its grants, its trace).
  start_agent
  in_container team-a-12 runc-init -- sleep 3 >"$WORK/init.out" 2>&1 &
  local init=$!
  for i in $(seq 50); do grep -q "container team-a-12: process" "$WORK/agent.log" && break; sleep 0.1; done
  in_container team-a-12 crun-exec -- sh -c "$(probe uverbs0); $(probe uverbs1)" >"$WORK/exec.out" 2>&1 || fail "exec exit $?"
  expect_line "$WORK/exec.out" "uverbs0-open" " OK ioctl="
  expect_line "$WORK/exec.out" "uverbs1-open" " ERR EACCES$"
  expect_in "$WORK/agent.log" "container team-a-12: process 0 (running) joins its session (2 listeners), bound to its first caller"
  expect_in "$WORK/agent.log" "container team-a-12: the process its runtime did not name is pid "
  kill $init 2>/dev/null
  wait $init
}

case_crun_exec_not_the_containers_refused() {
  # A listener whose runtime named no process, for a container whose init has a pid namespace of
  # its own, whose first caller is not in it (a runtime's message naming a container the process
  # is not in): every call on it fails with ENOSYS, unread, and the line says why. One for a
  # container the agent does not serve is refused at once.
  start_agent
  in_container team-a-13 runc-init --pidns -- sleep 3 >"$WORK/init.out" 2>&1 &
  local init=$!
  for i in $(seq 50); do grep -q "container team-a-13: process" "$WORK/agent.log" && break; sleep 0.1; done
  in_container team-a-13 crun-exec -- sh -c "$(probe uverbs0)" >"$WORK/exec.out" 2>&1
  expect_line "$WORK/exec.out" "uverbs0-open" " ERR ENOSYS$"
  expect_in "$WORK/agent.log" "a listener its runtime did not name a process for is refused: its first caller, pid "
  expect_in "$WORK/agent.log" "lives in another pid namespace than container team-a-13's (its calls fail with ENOSYS)"
  in_container team-a-14 crun-exec -- sh -c "$(probe uverbs0)" >"$WORK/exec2.out" 2>&1
  expect_line "$WORK/exec2.out" "uverbs0-open" " ERR ENOSYS$"
  expect_in "$WORK/agent.log" "container team-a-14: process 0 refused: its runtime named no process (pid 0), which may only join a container this agent serves already"
  kill $init 2>/dev/null
  wait $init
}

case_exec_listeners_closed_when_their_process_exits() {
  # A runtime that execs into a container every few seconds (a liveness probe) hands over a
  # listener each time: once that process has exited, its listener is closed and its receiver
  # thread gone, so the agent's listeners and threads do not grow with the container's age.
  start_agent
  in_container team-a-3 runc-init -- sleep 10 >"$WORK/init.out" 2>&1 &
  local init=$! i threads
  entries() { local e=("$1"/*); echo "${#e[@]}"; }
  listeners() { find /proc/$AGENT_PID/fd -lname 'anon_inode:seccomp notify' | wc -l; }
  for i in $(seq 50); do grep -q "container team-a-3: process" "$WORK/agent.log" && break; sleep 0.1; done
  # The first exec's device calls load the observer (a traced container): its threads count as
  # before.
  in_container team-a-3 runc-exec -- sh -c "$(probe uverbs0)" >"$WORK/exec.out" 2>&1 || fail "exec exit $?"
  sleep 0.5
  threads=$(entries /proc/$AGENT_PID/task)
  [[ $(listeners) == 1 ]] || fail "$(listeners) listeners held after the first exec exited, not the init's alone"
  for i in $(seq 8); do
    in_container team-a-3 runc-exec -- sh -c "$(probe uverbs0)" >"$WORK/exec.out" 2>&1 || fail "exec $i exit $?"
    expect_line "$WORK/exec.out" "uverbs0-open" " OK ioctl="
  done
  expect_in "$WORK/agent.log" "(running) joins its session (10 listeners)"
  sleep 0.5
  [[ $(listeners) == 1 ]] || fail "$(listeners) listeners held after 8 more execs exited, not the init's alone"
  (($(entries /proc/$AGENT_PID/task) <= threads)) ||
    { cat /proc/$AGENT_PID/task/*/comm; fail "the agent has more threads after 8 execs that exited ($threads before)"; }
  kill $init 2>/dev/null
  wait $init
}

case_only_root_hands_over_listeners() {
  # The socket is 0600 and the agent checks SO_PEERCRED: an unprivileged process cannot even
  # connect, so it cannot hand the agent a listener with a forged container id.
  start_agent
  [[ $(stat -c %a "$SOCK") == 600 ]] || fail "socket mode $(stat -c %a "$SOCK")"
  setpriv --reuid 65534 --regid 65534 --clear-groups "$RC" "$SOCK" team-a-9 runc-init -- true >"$WORK/n.out" 2>&1
  [[ $? == 120 ]] || { cat "$WORK/n.out"; fail "an unprivileged runtime was not refused"; }
  expect_in "$WORK/n.out" "connect to the agent: Permission denied"
  expect_not_in "$WORK/agent.log" "team-a-9"
}

case_dead_agent_fails_closed() {
  # SIGKILL the agent while a container runs 64 processes issuing trapped ioctls: every trapped
  # call then fails with ENOSYS (the kernel's answer when no listener is left), the 64 finish,
  # and nothing hangs (the container is bounded by a timeout that must not fire).
  local bench
  bench=$(realpath "$(dirname "$RC")/../bench/ioctl_bench")
  start_agent
  timeout 60 "$RC" "$SOCK" team-a-3 runc-init -- sh -c "
    for i in \$(seq 64); do $bench client 50000 /dev/infiniband/uverbs0 >/dev/null & done
    sleep 1.5; $(probe uverbs0); wait; echo all-64-done" >"$WORK/c.out" 2>&1 &
  local c=$!
  for i in $(seq 50); do grep -q "container team-a-3: process" "$WORK/agent.log" && break; sleep 0.1; done
  sleep 0.5
  kill -KILL "$AGENT_PID"
  wait "$AGENT_PID" 2>/dev/null
  AGENT_PID=
  wait $c
  local rc=$?
  [[ $rc != 124 ]] || fail "the container hung after the agent died"
  expect_line "$WORK/c.out" "uverbs0-open" " ERR ENOSYS$"
  expect_in "$WORK/c.out" "all-64-done"
}

# beside_a_hung_one A_ID A_SCRIPT B_ID: the agent with a 4 s deadline; container A_ID runs
# A_SCRIPT in the background (A_PID, output in a.out), and once its session exists container
# B_ID opens uverbs1 five times and prints when it ended (b.out).
beside_a_hung_one() {
  local i
  start_agent --blocking-deadline-ms 4000
  in_container "$1" runc-init -- sh -c "$2" >"$WORK/a.out" 2>&1 &
  A_PID=$!
  for i in $(seq 50); do grep -q "container $1: process" "$WORK/agent.log" && break; sleep 0.1; done
  sleep 0.3
  in_container "$3" crun --metadata job=42 -- sh -c "
    for i in 1 2 3 4 5; do $(probe uverbs1); done; date +%s%N" >"$WORK/b.out" 2>&1 || fail "b exit $?"
}
# other_served_first A_END: B's five opens (and their probe ioctls) were answered, and B ended
# before A's hung call returned.
other_served_first() {
  local b_end
  b_end=$(tail -1 "$WORK/b.out")
  [[ $(grep -c "uverbs1-open-syscall OK ioctl=E" "$WORK/b.out") == 5 ]] || { cat "$WORK/b.out"; fail "the other container's calls were not served"; }
  (( b_end < $1 )) || fail "the other container waited for the hung one ($b_end >= $1)"
}

case_hung_filesystem_costs_only_its_container() {
  # A container's open walks into a FUSE mount that never answers a lookup (the agent resolves
  # the path as root, on that container's session thread): the call fails with EIO at the
  # agent's deadline and the session is marked degraded, while another container served by the
  # same agent at the same time gets its opens answered at once.
  beside_a_hung_one team-a-4 "echo x > $HANG_MNT/hang/file; echo a-rc=\$?; date +%s%N" team-b-4
  wait $A_PID
  expect_in "$WORK/a.out" "Input/output error"
  expect_in "$WORK/a.out" "a-rc=2"
  other_served_first "$(tail -1 "$WORK/a.out")"
  expect_in "$WORK/agent.log" "[team-a-4] an open by pid"
  expect_in "$WORK/agent.log" "was not decided within 4000 ms"
  expect_not_in "$WORK/agent.log" "[team-b-4] an open"
  cat "$WORK/a.out" "$WORK/b.out" | grep -v "^uverbs"
}

case_hung_memory_costs_only_its_container() {
  # A container's uverbs ioctl points its argument into a mapping of a file whose FUSE server
  # never answers a read: the agent's read of that argument faults the page in and blocks for
  # ever. It blocks that container's session thread only: the call fails with EIO at the
  # deadline, the session is marked degraded, and another container's ioctls and opens served
  # at the same time are answered at once.
  local i
  beside_a_hung_one team-a-6 "$A ioctl-mapped /dev/infiniband/uverbs0 $HANG_MNT/stall; date +%s%N; sleep 3" team-b-6
  for i in $(seq 100); do [[ $(wc -l <"$WORK/a.out") -ge 2 ]] && break; sleep 0.1; done
  "$GP" agent ctl --ctl-socket "$CTL" stats >"$WORK/stats.out" || fail "ctl stats failed"
  wait $A_PID
  expect_line "$WORK/a.out" "ioctl-mapped" " ERR EIO$"
  jq -s -e 'any(.[]; .id == "team-a-6" and .degraded == true and .deadline_failures == 1)' "$WORK/stats.out" >/dev/null ||
    { cat "$WORK/stats.out"; fail "team-a-6 is not degraded with one deadline failure"; }
  other_served_first "$(sed -n 2p "$WORK/a.out")"
  expect_in "$WORK/agent.log" "[team-a-6] an ioctl by pid"
  expect_in "$WORK/agent.log" "was not decided within 4000 ms (reading its argument is blocked"
  expect_not_in "$WORK/agent.log" "[team-b-6] an "
  cat "$WORK/a.out" "$WORK/b.out" | grep -v "^uverbs"
}

case_restart_with_fd_store_reattaches() {
  # With --fd-store a holder process keeps each container's listener: a SIGKILLed agent's
  # container is not failed (its call made while no agent runs waits), and the next agent
  # re-attaches it with the same grants and answers that call, adding to its trace: what the
  # killed agent traced stays at the file's start.
  local store=$WORK/run/fds.sock t=$WORK/traces/team-a-5.jsonl c i
  trap 'pkill -KILL -f -- "--fd-store $WORK/run/fds.sock" 2>/dev/null; [[ -n $AGENT_PID ]] && kill -KILL $AGENT_PID 2>/dev/null; rm -rf "$WORK"' EXIT
  start_agent --fd-store "$store"
  in_container team-a-5 runc-init -- sh -c "$(probe uverbs1); sleep 2; $(probe uverbs0); $(probe uverbs1)" >"$WORK/c.out" 2>&1 &
  c=$!
  for i in $(seq 50); do has "$t" uverbs1 deny 2>/dev/null && break; sleep 0.1; done
  has "$t" uverbs1 deny || { cat "$t"; fail "the denial before the kill is not traced"; }
  kill -KILL "$AGENT_PID"
  wait "$AGENT_PID" 2>/dev/null
  AGENT_PID=
  cp "$t" "$WORK/before-kill.jsonl"
  # The container calls again 2 s after its first call (traced within the session's 1 s sweep),
  # with no agent: the call must wait, not fail.
  sleep 3
  kill -0 $c 2>/dev/null || { cat "$WORK/c.out"; fail "the container did not wait for the next agent"; }
  rm -f "$SOCK" "$CTL"
  start_agent --fd-store "$store"
  wait $c || { rc=$?; cat "$WORK/c.out"; fail "container exit $rc"; }
  expect_line "$WORK/c.out" "uverbs0-open" " OK ioctl="
  expect_line "$WORK/c.out" "uverbs1-open" " ERR EACCES$"
  expect_in "$WORK/agent.log" "container team-a-5: re-attached from the fd store"
  for i in $(seq 50); do grep -q "team-a-5 ended" "$WORK/agent.log" && break; sleep 0.1; done
  expect_in "$WORK/agent.log" "container team-a-5 ended"
  cmp -s -n "$(stat -c %s "$WORK/before-kill.jsonl")" "$WORK/before-kill.jsonl" "$t" ||
    { cat "$t"; fail "the restarted agent's trace does not start with what was traced before the kill"; }
  jq -e -s '[.[] | select(.device == "uverbs1" and .decision == "deny")] | length >= 2' "$t" >/dev/null &&
    has "$t" uverbs0 allow || { cat "$t"; fail "the trace lacks a denial or the open, before or after the restart"; }
}

# with_fd_store: the agent is started with --fd-store (STORE); the holder it starts (a copy of
# the agent process, named by the store's unique path) is killed at exit, and with it every
# listener it keeps, so no caller is left waiting whatever the case's outcome.
with_fd_store() {
  STORE=$WORK/run/fds.sock
  trap 'for p in $(pgrep -f -- "--fd-store $STORE"); do kill -KILL "$p"; done 2>/dev/null
        [[ -n $AGENT_PID ]] && kill -KILL $AGENT_PID 2>/dev/null; rm -rf "$WORK"' EXIT
}
# holder_fds: the holder's open fds, once the agent serves (it subscribes to the holder after its
# sockets exist: counted before, the subscription would look like a kept connection).
holder_fds() {
  local i
  for i in $(seq 100); do grep -q "gdrproxy agent: serving" "$WORK/agent.log" && break; sleep 0.05; done
  ls "/proc/$1/fd" | wc -l
}
holder_pid() {
  local p
  for p in $(pgrep -f -- "--fd-store $STORE"); do [[ $p != "$AGENT_PID" ]] && echo "$p"; done
}
# kill_and_restart_agent N: SIGKILL the agent, keep its log as agent.N.log, start the next one
# and wait until it serves.
# The killed agent is waited for until its threads are gone, but for at most 3 s: a thread
# blocked in a FUSE request its server holds keeps that process a zombie with its fds open.
kill_and_restart_agent() {
  local i
  kill -KILL "$AGENT_PID"
  for i in $(seq 30); do
    [[ $(ls /proc/$AGENT_PID/task 2>/dev/null | wc -l) -le 1 ]] && break
    sleep 0.1
  done
  [[ $(ls /proc/$AGENT_PID/task 2>/dev/null | wc -l) -le 1 ]] && wait "$AGENT_PID" 2>/dev/null
  AGENT_PID=
  cp "$WORK/agent.log" "$WORK/agent.$1.log"
  start_agent --fd-store "$STORE"
  # Its sockets are bound before it takes the fd store's listeners: wait until it serves.
  for i in $(seq 100); do grep -q "gdrproxy agent: serving" "$WORK/agent.log" && return 0; sleep 0.05; done
  fail "the restarted agent did not serve"
}
# gone_within SECONDS PID: the process has exited within that time.
gone_within() {
  local i
  for i in $(seq $(($1 * 10))); do kill -0 "$2" 2>/dev/null || return 0; sleep 0.1; done
  return 1
}

case_hung_call_answered_after_agent_killed() {
  # Issue 29 item 4. The agent is SIGKILLed while it handles a container's open (its path lookup
  # hangs in a FUSE mount): the kernel holds that call as received, no later RECV returns it, and
  # the fd store's copy of the listener keeps the kernel from failing it. The next agent must
  # answer it (EINTR: the call did not run), not leave the caller blocked for ever.
  with_fd_store
  start_agent --fd-store "$STORE"
  in_container team-a-12 runc-init -- sh -c "$A open $HANG_MNT/hang/file rdwr syscall" >"$WORK/c.out" 2>&1 &
  local c=$!
  for i in $(seq 50); do grep -q "container team-a-12: process" "$WORK/agent.log" && break; sleep 0.1; done
  # The receiver has taken the open and is blocked in the lookup. (The agent's sockets are left
  # in place for the next one, as a real restart does.)
  sleep 1.5
  kill -0 $c 2>/dev/null || { cat "$WORK/c.out"; fail "the open did not hang"; }
  kill_and_restart_agent 1
  gone_within 10 $c || fail "the open the killed agent had received still waits 10 s after the next agent started"
  wait $c
  expect_line "$WORK/c.out" "open-syscall" " ERR EINTR$"
  expect_in "$WORK/agent.log" "[team-a-12] answered 1 call(s) a killed agent had received and not answered"
  # The killed agent cannot finish exiting (its thread waits on the FUSE server) and its sockets
  # still take connections: the next agent replaces them rather than refuse to start.
  expect_in "$WORK/agent.log" "was killed and cannot finish exiting"
}

case_hung_call_handled_again_once_its_agent_is_gone() {
  # The agent is SIGKILLed while it handles a container's open (its path lookup hangs in a FUSE
  # mount), and then the mount's connection is aborted, so the killed agent finishes exiting.
  # The next agent finds the whole call in the received-id page the fd store kept and handles it
  # again, as if just received: the caller gets the answer its open earns now, not EINTR (here the
  # mount is gone, so the path cannot be resolved as the caller would and the agent fails closed:
  # EACCES, said with the lookup's ENOTCONN). Once only: a call whose handling kills its agent is not retried for ever
  # (ReceivedIdPage.TheStrandedCallIsTakenToBeHandledAgainOnce), and while the killed agent cannot
  # finish exiting the call is failed instead (hung_call_answered_after_agent_killed).
  local c i dev
  with_fd_store
  start_agent --fd-store "$STORE"
  in_container team-a-27 runc-init -- sh -c "$A open $HANG_MNT/hang/file rdwr syscall" >"$WORK/c.out" 2>&1 &
  c=$!
  for i in $(seq 50); do grep -q "container team-a-27: process" "$WORK/agent.log" && break; sleep 0.1; done
  sleep 1.5
  kill -0 $c 2>/dev/null || { cat "$WORK/c.out"; fail "the open did not hang"; }
  kill -KILL "$AGENT_PID"
  # The connection's number is the mount's device number.
  dev=$(stat -c %d "$HANG_MNT" 2>/dev/null)
  [[ -d /sys/fs/fuse/connections/$dev ]] || mount -t fusectl none /sys/fs/fuse/connections 2>/dev/null
  [[ -w /sys/fs/fuse/connections/$dev/abort ]] || fail "cannot abort the FUSE connection $dev here"
  echo 1 >"/sys/fs/fuse/connections/$dev/abort"
  for i in $(seq 50); do kill -0 "$AGENT_PID" 2>/dev/null || break; wait "$AGENT_PID" 2>/dev/null; sleep 0.1; done
  kill -0 "$AGENT_PID" 2>/dev/null && fail "the killed agent did not finish exiting once the mount was aborted"
  AGENT_PID=
  cp "$WORK/agent.log" "$WORK/agent.1.log"
  start_agent --fd-store "$STORE"
  gone_within 10 $c || fail "the open the killed agent had received still waits 10 s after the next agent started"
  wait $c
  expect_line "$WORK/c.out" "open-syscall" " ERR EACCES$"
  expect_in "$WORK/agent.log" "cannot be resolved as the caller would (Transport endpoint is not connected), failed closed -> EACCES"
  expect_in "$WORK/agent.log" "[team-a-27] handling again a call a killed agent had received and not answered"
  expect_not_in "$WORK/agent.log" "[team-a-27] answered 1 call(s) a killed agent had received"
}

case_restart_under_traffic_strands_no_call() {
  # Issue 29 item 4, under load: four processes of a container issue trapped ioctls without a
  # pause while the agent is SIGKILLed and restarted five times; a kill almost always lands on a
  # call being handled. Every process must go on and finish once told to stop.
  local bench c i r
  bench=$(realpath "$(dirname "$RC")/../bench/ioctl_bench")
  with_fd_store
  start_agent --fd-store "$STORE"
  touch "$WORK/go-on"
  in_container team-a-13 runc-init -- sh -c "
    for i in 1 2 3 4; do (while [ -e $WORK/go-on ]; do $bench client 300 /dev/infiniband/uverbs0 >/dev/null; done) & done
    wait; echo all-4-done" >"$WORK/c.out" 2>&1 &
  c=$!
  for i in $(seq 50); do grep -q "container team-a-13: process" "$WORK/agent.log" && break; sleep 0.1; done
  for r in 1 2 3 4 5; do
    sleep 0.7
    kill_and_restart_agent $r
  done
  sleep 0.5
  rm "$WORK/go-on"
  gone_within 20 $c || { ps -o pid,stat,wchan:32,args -g "$(ps -o sid= $c)" >&2; fail "a process still waits 20 s after it was told to stop (a call stranded by a kill)"; }
  wait $c
  expect_in "$WORK/c.out" "all-4-done"
  cat "$WORK"/agent.*.log "$WORK/agent.log" | grep -F "a killed agent had received" || true
}

case_restart_refuses_a_reused_pid() {
  # Issue 29 item 3. A member of pidfd_getfd group job7 dies while no agent runs, and another
  # tenant's process (pid 1 of its own pid namespace, holding a secret fd) lands on its host pid.
  # The next agent must not re-attach the dead container to that process: its pid namespace
  # would become a peer of group job7, and a member could take the other tenant's fd.
  local F x p u v i
  F=$(realpath "$(dirname "$A")/fd_share")
  with_fd_store
  start_agent --fd-store "$STORE"
  in_container job7-x runc-init --pidns --trap-pidfd-getfd -- sleep 60 >"$WORK/x.out" 2>&1 &
  x=$!
  for i in $(seq 50); do grep -q "container job7-x: process" "$WORK/agent.log" && break; sleep 0.1; done
  p=$(sed -n 's/.*container job7-x: process \([0-9]*\) .*/\1/p' "$WORK/agent.log" | head -1)
  [[ -n $p ]] || fail "job7-x was not adopted"
  kill -KILL "$AGENT_PID"
  wait "$AGENT_PID" 2>/dev/null
  AGENT_PID=
  kill -KILL "$p"
  wait $x
  # The other tenant's process on pid $p, pid 1 of its own pid namespace: the first child of a
  # shell that entered a new one, forked right after ns_last_pid is set (other forks on the host
  # may come between: retried).
  for i in $(seq 200); do
    unshare --pid -- sh -c "echo $((p - 1)) >/proc/sys/kernel/ns_last_pid; \"$F\" serve \"$WORK/victim.p\" & wait" &
    u=$!
    v=
    for _ in $(seq 20); do v=$(pgrep -P $u) && break; sleep 0.01; done
    [[ $v == "$p" ]] && break
    kill -KILL $u $v 2>/dev/null
    wait $u 2>/dev/null
    rm -f "$WORK/victim.p"
  done
  [[ $v == "$p" ]] || { echo "SKIP [$CASE]: could not land a process on pid $p"; exit 77; }
  for i in $(seq 100); do [[ -s $WORK/victim.p ]] && break; sleep 0.05; done
  rm -f "$SOCK" "$CTL"
  start_agent --fd-store "$STORE"
  local sfd
  read -r _ sfd <"$WORK/victim.p"
  python3 -c 'import os, sys
pidfd = os.pidfd_open(int(sys.argv[1])); os.set_inheritable(pidfd, True)
os.execvp(sys.argv[2], sys.argv[2:] + [str(pidfd)])' "$p" "$RC" "$SOCK" job7-y runc-init \
    --bundle "$(bundle_for job7-y)" --pidns --trap-pidfd-getfd -- "$F" take-pidfd "$sfd" >"$WORK/y.out" 2>&1
  kill -KILL $u $v 2>/dev/null
  "$GP" agent ctl --ctl-socket "$CTL" list >"$WORK/list.out" || fail "ctl list failed"
  expect_not_in "$WORK/y.out" "took: shared-by-"
  expect_in "$WORK/y.out" "take ERR EPERM"
  expect_not_in "$WORK/agent.log" "container job7-x: re-attached"
  expect_not_in "$WORK/list.out" '"id":"job7-x"'
}

case_restart_keeps_init_when_an_exec_exited() {
  # Issue 29 item 5. A container's `runc exec` process has exited; its init still runs. The fd
  # store keeps one entry per process and drops the exec's when it exits, so two restarts later
  # the init is still supervised (its call is served, not failed with ENOSYS).
  local c i n
  with_fd_store
  start_agent --fd-store "$STORE"
  listeners_kept() { find /proc/"$(holder_pid)"/fd -lname 'anon_inode:seccomp notify' | wc -l; }
  touch "$WORK/hold"
  in_container team-a-14 runc-init -- sh -c "while [ -e $WORK/hold ]; do sleep 0.1; done; $(probe uverbs0)" >"$WORK/init.out" 2>&1 &
  c=$!
  for i in $(seq 50); do grep -q "container team-a-14: process" "$WORK/agent.log" && break; sleep 0.1; done
  in_container team-a-14 runc-exec -- sh -c "$(probe uverbs0)" >"$WORK/exec.out" 2>&1 || fail "exec exit $?"
  expect_line "$WORK/exec.out" "uverbs0-open" " OK ioctl="
  for i in $(seq 20); do n=$(listeners_kept); ((n == 1)) && break; sleep 0.1; done
  kill_and_restart_agent 1
  kill_and_restart_agent 2
  local after=$(listeners_kept)
  rm "$WORK/hold"
  gone_within 10 $c || fail "the init did not finish"
  wait $c
  expect_line "$WORK/init.out" "uverbs0-open" " OK ioctl="
  expect_in "$WORK/agent.log" "container team-a-14: re-attached from the fd store"
  ((n == 1)) || fail "the fd store kept $n listeners after the exec exited, not the init's alone"
  ((after == 1)) || fail "the fd store kept $after listeners after two restarts, not the init's alone"
}

case_killed_holder_replaced_with_its_entries() {
  # The fd-store holder is SIGKILLed while the agent runs. The agent must start a new holder and
  # put every live process's entry in it again: otherwise the next agent restart finds an empty
  # store and the container loses its listener (its calls then fail with ENOSYS for ever).
  local c i old new=
  with_fd_store
  start_agent --fd-store "$STORE"
  touch "$WORK/hold"
  in_container team-a-16 runc-init -- sh -c "while [ -e $WORK/hold ]; do sleep 0.1; done; $(probe uverbs0)" >"$WORK/init.out" 2>&1 &
  c=$!
  for i in $(seq 50); do grep -q "container team-a-16: process" "$WORK/agent.log" && break; sleep 0.1; done
  old=$(holder_pid)
  [[ -n $old ]] || fail "no holder runs"
  kill -KILL "$old"
  for i in $(seq 30); do
    new=$(holder_pid)
    [[ -n $new && $new != "$old" ]] && break
    sleep 0.1
  done
  [[ -n $new && $new != "$old" ]] || fail "the killed holder was not replaced within 3 s"
  expect_in "$WORK/agent.log" "its holder was gone: a new one keeps the 1 live process(es) again"
  # The holder accepted runtimes for the agent: the agent accepts them itself while none runs,
  # and the new holder accepts them for it again; a container created now is served.
  expect_in "$WORK/agent.log" "its holder stopped accepting runtimes for this agent"
  expect_in "$WORK/agent.log" "its new holder accepts runtimes for this agent"
  in_container team-a-25 runc-init -- sh -c "$(probe uverbs0)" >"$WORK/after.out" 2>&1 &
  gone_within 10 $! || fail "a container created after the holder's replacement was not served"
  expect_line "$WORK/after.out" "uverbs0-open" " OK ioctl="
  kill_and_restart_agent 1
  expect_in "$WORK/agent.log" "1 process(es) kept"
  rm "$WORK/hold"
  gone_within 10 $c || fail "the init did not finish"
  wait $c
  expect_line "$WORK/init.out" "uverbs0-open" " OK ioctl="
  expect_in "$WORK/agent.log" "container team-a-16: re-attached from the fd store"
}

# runtime_waits_across_a_stop SIGNAL ID: the agent (with --fd-store) is stopped by SIGNAL; a
# runtime that hands container ID's listener over before the next agent starts waits in the
# socket's backlog (the holder keeps the socket listening), its process's trapped calls wait, and
# the next agent takes the socket back and serves it with its rule's grants.
runtime_waits_across_a_stop() {
  local c
  with_fd_store
  start_agent --fd-store "$STORE"
  kill -"$1" "$AGENT_PID"
  wait "$AGENT_PID" 2>/dev/null
  AGENT_PID=
  cp "$WORK/agent.log" "$WORK/agent.1.log"
  [[ -S $SOCK ]] || fail "the agent stopped by SIG$1 left no runtime socket"
  in_container "$2" runc-init -- sh -c "$(probe uverbs0); $(probe uverbs1)" >"$WORK/c.out" 2>&1 &
  c=$!
  sleep 1
  kill -0 $c 2>/dev/null || { cat "$WORK/c.out"; fail "the runtime did not wait for the next agent (refused, or its calls failed)"; }
  start_agent --fd-store "$STORE"
  gone_within 10 $c || fail "the next agent did not serve the container that came while none ran"
  wait $c || { rc=$?; cat "$WORK/c.out"; fail "container exit $rc"; }
  expect_line "$WORK/c.out" "uverbs0-open" " OK ioctl="
  expect_line "$WORK/c.out" "uverbs1-open" " ERR EACCES$"
  expect_in "$WORK/agent.log" "runtime socket $SOCK taken back from the fd store"
  expect_in "$WORK/agent.log" "container $2: process"
}

case_runtime_waits_while_no_agent_runs() {
  # Between a SIGKILL and the restart, a runtime is not refused.
  runtime_waits_across_a_stop KILL team-a-20
}

case_stop_with_fd_store_is_a_restart() {
  # With --fd-store a SIGTERM (systemd's restart, an upgrade) is a restart, as a kill is: the
  # runtime socket stays with the holder and a runtime is not refused. A drained agent is going
  # away: its socket goes.
  local i
  runtime_waits_across_a_stop TERM team-a-28
  expect_in "$WORK/agent.1.log" "and so does the runtime socket (runtimes wait in its backlog)"
  "$GP" agent ctl --ctl-socket "$CTL" drain >/dev/null || fail "ctl drain failed"
  for i in $(seq 50); do kill -0 "$AGENT_PID" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$AGENT_PID" 2>/dev/null && fail "the drained agent did not stop"
  wait "$AGENT_PID" 2>/dev/null
  AGENT_PID=
  [[ ! -e $SOCK ]] || fail "the drained agent left its runtime socket"
}

case_hung_adoption_killed_keeps_the_listener() {
  # The agent is SIGKILLed after it has read a runtime's handover and before it has adopted it:
  # here its read of the container's bundle hangs (the bundle path is on a FUSE mount whose
  # lookup never answers). The listener went into the fd store on receipt, so the next agent
  # adopts it from there and serves the process; it is not lost with the killed agent.
  local c i base holder
  HB=$HANG_MNT/hang-bundle
  with_fd_store
  # The bundle read must still be pending when the agent is killed: a deadline far away.
  start_agent --fd-store "$STORE" --handshake-deadline-ms 60000
  holder=$(holder_pid)
  [[ -n $holder ]] || fail "no holder runs"
  base=$(holder_fds "$holder")
  "$RC" "$SOCK" team-a-21 runc-init --bundle "$HB" -- sh -c "$(probe uverbs0)" >"$WORK/c.out" 2>&1 &
  c=$!
  # The holder has the handover (its listener, pidfd and received-id page) while the agent waits
  # on the bundle.
  for i in $(seq 100); do (($(ls /proc/$holder/fd | wc -l) >= base + 3)) && break; sleep 0.05; done
  (($(ls /proc/$holder/fd | wc -l) >= base + 3)) || fail "the handover did not reach the fd store"
  sleep 0.3
  expect_not_in "$WORK/agent.log" "container team-a-21: process"
  # The bundle becomes readable to the next agent (in this test's own mount namespace: the
  # killed agent's request stays with the FUSE server).
  umount -l "$HANG_MNT" || fail "cannot unmount the hung FUSE mount here"
  mkdir -p "$HB"
  trap 'rm -rf "$HB"; for p in $(pgrep -f -- "--fd-store $STORE"); do kill -KILL "$p"; done 2>/dev/null
        [[ -n $AGENT_PID ]] && kill -KILL $AGENT_PID 2>/dev/null; rm -rf "$WORK"' EXIT
  jq -n --arg s "$SOCK" '{ociVersion: "1.2.0", linux: {seccomp: {defaultAction: "SCMP_ACT_ALLOW", listenerPath: $s, listenerMetadata: ""}}}' \
    >"$HB/config.json"
  # The killed agent cannot finish exiting (its loop thread waits on the FUSE server): not
  # waited for; the next agent replaces its control socket.
  kill -KILL "$AGENT_PID"
  AGENT_PID=
  cp "$WORK/agent.log" "$WORK/agent.1.log"
  start_agent --fd-store "$STORE"
  for i in $(seq 100); do grep -q "gdrproxy agent: serving" "$WORK/agent.log" && break; sleep 0.05; done
  expect_in "$WORK/agent.log" "gdrproxy agent: serving"
  gone_within 10 $c || fail "the process whose adoption was cut short was not served by the next agent"
  wait $c
  expect_line "$WORK/c.out" "uverbs0-open" " OK ioctl="
  expect_in "$WORK/agent.log" "container team-a-21: re-attached from the fd store"
}

case_killed_while_the_runtime_sends_keeps_the_listener() {
  # The agent is SIGKILLed after it accepted a runtime's connection and before the state arrived
  # whole (runc connects and then writes; a runtime may send its state in pieces). The connection
  # is in the fd store from its accept and the agent only peeks at it: the runtime's bytes,
  # listener and all, wait there, and the next agent reads the connection again from its first
  # byte. Here the runtime pauses 1.5 s after connecting and again after its first piece (which
  # carries the listener): the kill falls in the first pause, the restart in the second.
  local c i holder base
  with_fd_store
  start_agent --fd-store "$STORE"
  holder=$(holder_pid)
  [[ -n $holder ]] || fail "no holder runs"
  base=$(holder_fds "$holder")
  "$RC" "$SOCK" team-a-24 runc-init --pause-ms 1500 -- sh -c "$(probe uverbs0)" >"$WORK/c.out" 2>&1 &
  c=$!
  # Killed once the agent has accepted (the holder has one more fd: the connection), or after 0.5 s.
  for i in $(seq 25); do (($(ls /proc/$holder/fd | wc -l) >= base + 1)) && break; sleep 0.02; done
  kill -KILL "$AGENT_PID"
  wait "$AGENT_PID" 2>/dev/null
  AGENT_PID=
  cp "$WORK/agent.log" "$WORK/agent.1.log"
  sleep 1.8
  kill -0 $c 2>/dev/null || { cat "$WORK/c.out"; fail "the runtime could not send to the killed agent's connection"; }
  start_agent --fd-store "$STORE"
  gone_within 10 $c || fail "the next agent did not serve the container whose state was on its way"
  wait $c || { rc=$?; cat "$WORK/c.out"; fail "container exit $rc"; }
  expect_line "$WORK/c.out" "uverbs0-open" " OK ioctl="
  expect_in "$WORK/agent.log" "1 runtime connection(s) an earlier agent had not read whole: read again"
  expect_in "$WORK/agent.log" "container team-a-24: process"
  # The connection's entry went with the state's reading: the holder keeps the listener's entry
  # only until the process exits, and nothing of the connection.
  for i in $(seq 50); do (($(ls /proc/$holder/fd | wc -l) <= base)) && break; sleep 0.1; done
  (($(ls /proc/$holder/fd | wc -l) <= base)) || fail "the holder still keeps $(($(ls /proc/$holder/fd | wc -l) - base)) fd(s) of the exited container"
}

case_holder_accepts_for_the_agent() {
  # With --fd-store the holder, not the agent, accepts runtimes on the runtime socket: it keeps
  # each connection from its accept and sends the agent a copy, so no handover is ever the
  # agent's alone (an agent that accepted itself lost the listener when killed between its accept
  # and its put of the connection in the store). Shown with the agent stopped (SIGSTOP): the
  # holder still accepts the runtime; the agent is then killed, and the next one is handed that
  # connection and serves the process.
  local c i holder base
  with_fd_store
  start_agent --fd-store "$STORE"
  holder=$(holder_pid)
  [[ -n $holder ]] || fail "no holder runs"
  base=$(holder_fds "$holder")
  kill -STOP "$AGENT_PID"
  "$RC" "$SOCK" team-a-26 runc-init -- sh -c "$(probe uverbs0)" >"$WORK/c.out" 2>&1 &
  c=$!
  for i in $(seq 100); do (($(ls /proc/$holder/fd | wc -l) >= base + 1)) && break; sleep 0.02; done
  (($(ls /proc/$holder/fd | wc -l) >= base + 1)) || fail "the holder did not accept the runtime while the agent was stopped"
  kill -KILL "$AGENT_PID"
  wait "$AGENT_PID" 2>/dev/null
  AGENT_PID=
  cp "$WORK/agent.log" "$WORK/agent.1.log"
  start_agent --fd-store "$STORE"
  gone_within 10 $c || fail "the next agent did not serve the process whose connection the holder kept"
  wait $c || { rc=$?; cat "$WORK/c.out"; fail "container exit $rc"; }
  expect_line "$WORK/c.out" "uverbs0-open" " OK ioctl="
  expect_in "$WORK/agent.log" "1 runtime connection(s) an earlier agent had not read whole: read again"
}

case_hung_bundle_costs_only_its_handover() {
  # A runtime names a bundle on a filesystem whose lookups never answer. The agent reads bundles
  # on threads of their own: meanwhile it adopts and serves another container and answers
  # `ctl`, and at the deadline it refuses the hung handover (its process's calls fail with
  # ENOSYS, never hang).
  local h o i t0 t1
  start_agent --handshake-deadline-ms 6000
  "$RC" "$SOCK" team-a-22 runc-init --bundle "$HANG_MNT/hang-b22" -- sh -c "$(probe uverbs0)" >"$WORK/h.out" 2>&1 &
  h=$!
  sleep 0.3
  t0=$(date +%s%N)
  in_container team-a-23 runc-init -- sh -c "$(probe uverbs0); sleep 2" >"$WORK/ok.out" 2>&1 &
  o=$!
  for i in $(seq 80); do grep -q "uverbs0-open" "$WORK/ok.out" && break; sleep 0.05; done
  timeout 5 "$GP" agent ctl --ctl-socket "$CTL" list >"$WORK/list.out" || fail "ctl list failed or took 5 s"
  t1=$(date +%s%N)
  wait $o || { cat "$WORK/ok.out"; fail "the other container exit $?"; }
  expect_line "$WORK/ok.out" "uverbs0-open" " OK ioctl="
  expect_in "$WORK/list.out" '"team-a-23"'
  (((t1 - t0) / 1000000 < 4000)) || fail "the other container and ctl took $(((t1 - t0) / 1000000)) ms: the hung bundle held the agent"
  kill -0 $h 2>/dev/null || { cat "$WORK/h.out"; fail "the hung container's process did not wait for its adoption"; }
  gone_within 15 $h || fail "the hung handover was not refused at its deadline"
  wait $h
  expect_line "$WORK/h.out" "uverbs0-open" " ERR ENOSYS$"
  expect_in "$WORK/agent.log" "container team-a-22: process"
  expect_in "$WORK/agent.log" "was not read within 6000 ms (its filesystem does not answer)"
}

case_drain_stops_after_the_last_container() {
  # `ctl drain ID` keeps a container's running processes served but lets no new one join it;
  # `ctl drain` takes no new container and stops the agent (exit 0) when the last one ends.
  start_agent
  in_container team-a-8 runc-init -- sh -c "sleep 1.5; $(probe uverbs0)" >"$WORK/c.out" 2>&1 &
  local c=$! i
  for i in $(seq 50); do grep -q "container team-a-8: process" "$WORK/agent.log" && break; sleep 0.1; done
  "$GP" agent ctl --ctl-socket "$CTL" drain team-a-8 >"$WORK/d1.out" || fail "ctl drain ID failed"
  expect_in "$WORK/d1.out" '"draining":true'
  in_container team-a-8 runc-exec -- sh -c "$(probe uverbs0)" >"$WORK/e.out" 2>&1
  expect_line "$WORK/e.out" "uverbs0-open" " ERR ENOSYS$"
  "$GP" agent ctl --ctl-socket "$CTL" drain >"$WORK/d2.out" || fail "ctl drain failed"
  in_container team-a-9 runc-init -- sh -c "$(probe uverbs0)" >"$WORK/n.out" 2>&1
  expect_line "$WORK/n.out" "uverbs0-open" " ERR ENOSYS$"
  wait $c
  expect_line "$WORK/c.out" "uverbs0-open" " OK ioctl="
  for i in $(seq 50); do kill -0 "$AGENT_PID" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$AGENT_PID" 2>/dev/null && fail "the drained agent did not stop"
  wait "$AGENT_PID"
  local rc=$?
  AGENT_PID=
  [[ $rc == 0 ]] || fail "the drained agent exited $rc"
  expect_in "$WORK/agent.log" "team-a-9: process"
  expect_in "$WORK/agent.log" "refused: the agent is draining"
  expect_in "$WORK/agent.log" "drained: the last container ended, stopping"
}

case_unverifiable_states_refused() {
  # The message alone binds nothing: a bundle whose config.json hands its listener elsewhere, a
  # metadata the bundle does not say (it would select another rule), and a `runc exec` of a
  # container from outside that container's pid namespace are each refused, and the refused
  # process's trapped calls fail with ENOSYS.
  start_agent
  mkdir -p "$WORK/elsewhere"
  jq -n '{linux: {seccomp: {listenerPath: "/run/other-agent.sock"}}}' >"$WORK/elsewhere/config.json"
  "$RC" "$SOCK" team-a-10 runc-init --bundle "$WORK/elsewhere" -- sh -c "$(probe uverbs0)" >"$WORK/1.out" 2>&1
  expect_line "$WORK/1.out" "uverbs0-open" " ERR ENOSYS$"
  expect_in "$WORK/agent.log" "hands its listener to /run/other-agent.sock, not to this agent's"
  bundle_for team-b-10 job=7 >/dev/null
  in_container team-b-10 crun --metadata job=42 -- sh -c "$(probe uverbs1)" >"$WORK/2.out" 2>&1
  expect_line "$WORK/2.out" "uverbs1-open" " ERR ENOSYS$"
  expect_in "$WORK/agent.log" 'the runtime sent metadata "job=42" but'
  # A container with its own pid namespace; an "exec" from the host's claims it.
  in_container team-a-11 runc-init --pidns -- sleep 3 >"$WORK/init.out" 2>&1 &
  local init=$! i
  for i in $(seq 50); do grep -q "container team-a-11: process" "$WORK/agent.log" && break; sleep 0.1; done
  in_container team-a-11 runc-exec -- sh -c "$(probe uverbs0)" >"$WORK/3.out" 2>&1
  expect_line "$WORK/3.out" "uverbs0-open" " ERR ENOSYS$"
  expect_in "$WORK/agent.log" "claims container team-a-11 but lives in another pid namespace"
  kill $init 2>/dev/null
  wait $init
}

case_pidfd_getfd_brokered_within_container_and_group() {
  # Each container is its own pid namespace and traps pidfd_getfd. Within a container the agent
  # performs it (the trace says "broker"); a container reaching into another is refused unless
  # the operator put both in one group (job7-*), and then it is brokered too.
  local F i
  F=$(realpath "$(dirname "$A")/fd_share")
  start_agent
  # take_from SERVER_CONTAINER_FILE ID: container ID is handed a pidfd of the process serving
  # in another container and asks it for the served fd.
  take_from() {
    local sfd hostpid
    read -r _ sfd <"$1"
    hostpid=$(pgrep -f "fd_share serve $1\$" | head -1)
    [[ -n $hostpid ]] || fail "no server process for $1"
    python3 -c 'import os, sys
pidfd = os.pidfd_open(int(sys.argv[1])); os.set_inheritable(pidfd, True)
os.execvp(sys.argv[2], sys.argv[2:] + [str(pidfd)])' "$hostpid" "$RC" "$SOCK" "$2" runc-init \
      --bundle "$(bundle_for "$2")" --pidns --trap-pidfd-getfd -- "$F" take-pidfd "$sfd"
  }
  local servers=()
  for id in solo-1 job7-1; do
    in_container $id runc-init --pidns --trap-pidfd-getfd -- sh -c "
      $F serve $WORK/$id.p & s=\$!
      for i in \$(seq 100); do [ -s $WORK/$id.p ] && break; sleep 0.05; done
      read pid fd < $WORK/$id.p; $F take \$pid \$fd; sleep 4; kill \$s" >"$WORK/$id.out" 2>&1 &
    servers+=($!)
  done
  for i in $(seq 100); do [[ -s $WORK/solo-1.p && -s $WORK/job7-1.p ]] && break; sleep 0.05; done
  take_from "$WORK/solo-1.p" solo-2 >"$WORK/cross.out" 2>&1
  take_from "$WORK/job7-1.p" job7-2 >"$WORK/group.out" 2>&1
  wait "${servers[@]}"
  expect_in "$WORK/solo-1.out" "took: shared-by-"
  expect_in "$WORK/job7-1.out" "took: shared-by-"
  jq -e -s 'any(.[]; .syscall == "pidfd_getfd" and .decision == "broker" and .result >= 0)' \
    "$WORK/traces/solo-1.jsonl" >/dev/null || fail "no brokered pidfd_getfd in solo-1's trace"
  expect_in "$WORK/cross.out" "take ERR EPERM"
  expect_in "$WORK/agent.log" "[solo-2] denied pidfd_getfd by pid"
  expect_in "$WORK/agent.log" "is outside this sandbox -> EPERM"
  expect_in "$WORK/group.out" "took: shared-by-"
  jq -e -s 'any(.[]; .syscall == "pidfd_getfd" and .decision == "broker" and .result >= 0)' \
    "$WORK/traces/job7-2.jsonl" >/dev/null || fail "no brokered pidfd_getfd in job7-2's trace"
}

case_grants_from_metadata_within_the_rule() {
  # A rule with grants_from_metadata takes the bundle's gdrproxy-grants line (the metadata the
  # agent checked against the bundle's config.json), within the rule's grants; a line asking for
  # more is refused whole, and so is a container whose metadata has no such line.
  start_agent
  in_container meta-1 runc-init --metadata gdrproxy-grants=uverbs0 -- sh -c "$(probe uverbs0); $(probe uverbs1)" >"$WORK/1.out" 2>&1
  expect_line "$WORK/1.out" "uverbs0-open" " OK ioctl="
  expect_line "$WORK/1.out" "uverbs1-open" " ERR EACCES$"
  in_container meta-2 runc-init --metadata gdrproxy-grants=uverbs0,uverbs1 -- sh -c "$(probe uverbs0)" >"$WORK/2.out" 2>&1
  expect_line "$WORK/2.out" "uverbs0-open" " ERR ENOSYS$"
  expect_in "$WORK/agent.log" "its metadata asks for uverbs1, which rule containers[3] does not allow"
  in_container meta-3 runc-init --metadata job=1 -- sh -c "$(probe uverbs0)" >"$WORK/3.out" 2>&1
  expect_line "$WORK/3.out" "uverbs0-open" " ERR ENOSYS$"
  expect_in "$WORK/agent.log" "its metadata has no gdrproxy-grants line"
}

case_lsm_choice_where_the_kernel_has_no_bpf_lsm() {
  # Where the BPF LSM is not active (this machine; the VM stage runs the judge itself:
  # tests/vm/agent_lsm.sh): --lsm on refuses to start, saying why in one line; --lsm auto serves
  # containers, judged by the agent alone, and says so; `ctl list` then marks none as judged.
  if grep -qw bpf /sys/kernel/security/lsm 2>/dev/null; then
    echo "SKIP [$CASE]: the BPF LSM is active here (tests/vm/agent_lsm.sh covers that)"
    exit 77
  fi
  local rc=0
  timeout 20 "$GP" agent --socket "$SOCK" --ctl-socket "$CTL" --config "$WORK/agent.json" --lsm on \
    >"$WORK/on.out" 2>&1 || rc=$?
  ((rc == 1)) || fail "--lsm on: exit $rc"
  [[ $(grep -c . "$WORK/on.out") == 1 ]] || { cat "$WORK/on.out"; fail "--lsm on: not one line"; }
  expect_in "$WORK/on.out" "--lsm on: "
  expect_in "$WORK/on.out" "BPF LSM"
  [[ ! -S $SOCK ]] || fail "--lsm on left its socket"
  start_agent --lsm auto
  in_container team-a-lsm runc-init -- sh -c "$(probe uverbs0); $(probe uverbs1)" >"$WORK/a.out" 2>&1 || fail "exit $?"
  expect_line "$WORK/a.out" "uverbs0-open" " OK ioctl="
  expect_line "$WORK/a.out" "uverbs1-open" " ERR EACCES$"
  expect_in "$WORK/agent.log" "--lsm auto: "
  expect_in "$WORK/agent.log" "containers' device ioctls are judged by the agent alone"
  expect_not_in "$WORK/agent.log" "judged in the kernel (BPF LSM) by its cgroup"
  # A runtime's judge hook is answered, not judged: the container goes on, and the agent says so.
  "$GP" agent ctl --ctl-socket "$CTL" judge-pending $$ team-a-new >"$WORK/jp.out" 2>&1 || fail "ctl judge-pending: exit $?"
  expect_in "$WORK/jp.out" '{"judged":false,"why":"the agent has no BPF LSM judge (--lsm auto, none here)"}'
  expect_in "$WORK/agent.log" "container team-a-new (pid $$): its runtime asks for a judge from its creation, but the agent has no BPF LSM judge"
  "$GP" agent ctl --ctl-socket "$CTL" judge-pending x1 >"$WORK/jp2.out" 2>&1
  expect_in "$WORK/jp2.out" '{"error":"expected judge-pending PID [ID]"}'
}

case_bad_config_refused() {
  # A typo in the operator's file never turns into "every device": the agent refuses to start
  # and names the field.
  echo '{"version": 1, "containers": [{"match": {"id": "x"}, "grant": ["uverbs0"]}]}' >"$WORK/agent.json"
  local rc=0
  "$GP" agent --socket "$SOCK" --ctl-socket "$CTL" --config "$WORK/agent.json" >"$WORK/out" 2>&1 || rc=$?
  ((rc == 1)) || fail "exit $rc"
  expect_in "$WORK/out" "containers[0].grant: unknown key"
}

case_nvidia_abi_as_judges_an_uncovered_driver() {
  # A driver of a branch the tables do not hold: the agent's config names the tables to judge it
  # with, and a container's NVIDIA calls are judged by them (its policy's denial enforced); with
  # none named, the container's session refuses to serve, and the line says what to set.
  mkdir -p "$WORK/driver/nvidia"
  printf 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  610.57.04  Release Build\n' \
    >"$WORK/driver/nvidia/version"
  echo '{"version":1,"classes":{"nvidia":{"rules":[{"action":"deny","escape":"RM_ALLOC"}]}}}' >"$WORK/p.json"
  local named abi i
  for named in yes no; do
    abi=''
    [[ $named == yes ]] && abi='"nvidia_abi_as": "595.45.04",'
    printf '{"version": 1, %s "default": {"grants": ["nvidiactl"], "policy": "%s", "mode": "enforce"}}\n' \
      "$abi" "$WORK/p.json" >"$WORK/agent.json"
    # The agent sees the driver's version through its own mount namespace.
    unshare --mount --propagation private sh -c 'mount --bind "$0" /proc/driver && exec "$@"' \
      "$WORK/driver" "$GP" agent --socket "$SOCK" --ctl-socket "$CTL" --config "$WORK/agent.json" \
      >"$WORK/agent.log" 2>&1 &
    AGENT_PID=$!
    for i in $(seq 100); do [[ -S $SOCK && -S $CTL ]] && break; sleep 0.05; done
    in_container "nv-$named" runc-init -- "$TK" exercise nvidia /dev/nvidiactl >"$WORK/nv.out" 2>&1
    if [[ $named == yes ]]; then
      expect_in "$WORK/agent.log" "NVIDIA driver 610.57.04: enforcing with the tables of 595.45.04, as the operator named them"
      expect_in "$WORK/nv.out" "RM_ALLOC(NV01_ROOT_CLIENT) -> EPERM"
    else
      expect_in "$WORK/agent.log" "NVIDIA driver 610.57.04 is of a branch this build's ABI tables do not hold"
      expect_in "$WORK/agent.log" "\"nvidia_abi_as\" in the agent's config"
      expect_not_in "$WORK/nv.out" "RM_ALLOC(NV01_ROOT_CLIENT) -> EINVAL"
    fi
    kill -TERM $AGENT_PID
    wait $AGENT_PID
    AGENT_PID=
    rm -f "$SOCK" "$CTL"
  done
}

# with_foreground_holder: the fd store's holder runs as `gdrproxy agent fd-store STORE`, a process
# of its own (HOLDER_PID, its log holder.log), as the fd-store container of the agent's pod runs
# it; killed at exit, and with it every listener it keeps.
with_foreground_holder() {
  STORE=$WORK/run/fds.sock HOLDER_PID=
  trap '[[ -n $HOLDER_PID ]] && kill -KILL $HOLDER_PID 2>/dev/null
        [[ -n ${AGENT_CG:-} ]] && { echo 1 >"$AGENT_CG/cgroup.kill"; for i in $(seq 50); do rmdir "$AGENT_CG" 2>/dev/null && break; sleep 0.1; done; }
        [[ -n $AGENT_PID ]] && kill -KILL $AGENT_PID 2>/dev/null; rm -rf "$WORK"' EXIT
}
start_foreground_holder() {
  local i
  mkdir -p "$(dirname "$STORE")"
  "$GP" agent fd-store "$STORE" 2>"$WORK/holder.log" &
  HOLDER_PID=$!
  for i in $(seq 100); do grep -q "holding containers' listeners" "$WORK/holder.log" && return 0; sleep 0.05; done
  cat "$WORK/holder.log"
  fail "the foreground holder did not start"
}
serving_within() {
  local i
  for i in $(seq $(($1 * 10))); do grep -q "gdrproxy agent: serving" "$WORK/agent.log" && return 0; sleep 0.1; done
  return 1
}

case_agent_uses_a_running_foreground_holder() {
  # An agent with --fd-store that finds a holder answering at the path uses it and starts none of
  # its own: the socket stays the foreground holder's, no other holder process runs, and the
  # container's listener is in that holder.
  local ino c i
  with_foreground_holder
  start_foreground_holder
  ino=$(stat -c %i "$STORE")
  start_agent --fd-store "$STORE"
  serving_within 5 || fail "the agent did not serve"
  [[ $(stat -c %i "$STORE") == "$ino" ]] || fail "the agent bound a holder of its own at $STORE"
  [[ -z $(holder_pid) ]] || fail "the agent started a holder of its own: $(holder_pid)"
  touch "$WORK/hold"
  in_container team-a-41 runc-init -- sh -c "while [ -e $WORK/hold ]; do sleep 0.1; done; $(probe uverbs0)" >"$WORK/c.out" 2>&1 &
  c=$!
  for i in $(seq 50); do
    (($(find /proc/$HOLDER_PID/fd -lname 'anon_inode:seccomp notify' | wc -l) == 1)) && break
    sleep 0.1
  done
  (($(find /proc/$HOLDER_PID/fd -lname 'anon_inode:seccomp notify' | wc -l) == 1)) ||
    fail "the container's listener is not in the foreground holder"
  rm "$WORK/hold"
  gone_within 10 $c || fail "the container did not finish"
  wait $c || { rc=$?; cat "$WORK/c.out"; fail "container exit $rc"; }
  expect_line "$WORK/c.out" "uverbs0-open" " OK ioctl="
}

case_restart_with_foreground_holder_after_the_agents_cgroup_is_killed() {
  # The agent's pod on Kubernetes: the agent runs in a cgroup of its own (its container's) with
  # --fd-store-external, started before the holder (the kubelet does not wait for the holder's
  # container), and the holder is `gdrproxy agent fd-store` outside that cgroup. The agent's
  # container is killed whole (cgroup.kill, as the runtime's shim does to a host-pid container);
  # the next agent re-attaches the running container from the holder and its trapped calls are
  # served. A second holder on the same path is refused in one line; SIGTERM stops the holder.
  local cg root c i rc=0
  root=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
  [[ -n $root ]] || { echo "SKIP [$CASE]: no cgroup v2 mounted"; exit 77; }
  with_foreground_holder
  cg=$root/gdrproxy-agent-test-$$
  mkdir "$cg" 2>/dev/null || { echo "SKIP [$CASE]: cannot make a cgroup under $root"; exit 77; }
  AGENT_CG=$cg
  [[ -e $cg/cgroup.kill ]] || { echo "SKIP [$CASE]: the kernel has no cgroup.kill"; exit 77; }
  start_agent_in_cgroup() {
    sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$GP" agent --socket "$SOCK" \
      --ctl-socket "$CTL" --config "$WORK/agent.json" --fd-store "$STORE" --fd-store-external \
      >"$WORK/agent.log" 2>&1 &
    AGENT_PID=$!
  }
  start_agent_in_cgroup
  sleep 1
  kill -0 "$AGENT_PID" 2>/dev/null || fail "the agent did not wait for the external holder"
  [[ ! -e $STORE ]] || fail "the agent with --fd-store-external started a holder itself"
  start_foreground_holder
  serving_within 10 || fail "the agent did not serve once the external holder answered"
  [[ -z $(holder_pid) ]] || fail "the agent started a holder of its own: $(holder_pid)"
  # One holder per path: a second is refused in one line, and the first serves on.
  "$GP" agent fd-store "$STORE" >"$WORK/second.log" 2>&1 || rc=$?
  ((rc == 1)) || { cat "$WORK/second.log"; fail "a second holder on the path exit $rc"; }
  [[ $(wc -l <"$WORK/second.log") == 1 ]] || { cat "$WORK/second.log"; fail "expected one line"; }
  expect_in "$WORK/second.log" "gdrproxy agent fd-store: a holder already answers at $STORE"
  kill -0 "$HOLDER_PID" || fail "the first holder is gone"
  touch "$WORK/hold"
  in_container team-a-40 runc-init -- sh -c "$A open /dev/infiniband/uverbs0 rdwr syscall | sed s/^/before-/
    while [ -e $WORK/hold ]; do sleep 0.1; done
    $A open /dev/infiniband/uverbs0 rdwr syscall | sed s/^/after-/; $(probe uverbs1)" >"$WORK/c.out" 2>&1 &
  c=$!
  for i in $(seq 50); do grep -q "^before-open" "$WORK/c.out" && break; sleep 0.1; done
  expect_line "$WORK/c.out" "before-open" " OK ioctl="
  # The agent's container is killed whole.
  echo 1 >"$cg/cgroup.kill" || fail "cgroup.kill"
  for i in $(seq 50); do [[ -z $(cat "$cg/cgroup.procs") ]] && break; sleep 0.1; done
  [[ -z $(cat "$cg/cgroup.procs") ]] || fail "the agent's cgroup still has processes"
  wait "$AGENT_PID" 2>/dev/null
  AGENT_PID=
  cp "$WORK/agent.log" "$WORK/agent.1.log"
  kill -0 "$HOLDER_PID" || fail "the holder died with the agent's cgroup"
  kill -0 "$c" || fail "the container did not outlive its agent"
  start_agent_in_cgroup
  serving_within 10 || fail "the restarted agent did not serve"
  expect_in "$WORK/agent.log" "container team-a-40: re-attached from the fd store"
  rm "$WORK/hold"
  gone_within 10 $c || fail "the re-attached container's calls were not served"
  wait $c || { rc=$?; cat "$WORK/c.out"; fail "container exit $rc"; }
  expect_line "$WORK/c.out" "after-open" " OK ioctl="
  expect_line "$WORK/c.out" "uverbs1-open" " ERR EACCES$"
  # SIGTERM stops the holder cleanly, its socket removed.
  kill -TERM "$HOLDER_PID"
  rc=0
  wait "$HOLDER_PID" || rc=$?
  HOLDER_PID=
  ((rc == 0)) || { cat "$WORK/holder.log"; fail "the holder's exit on SIGTERM: $rc"; }
  expect_in "$WORK/holder.log" "gdrproxy agent fd-store: stopped; the 0 listener(s) it held are dropped"
  [[ ! -e $STORE ]] || fail "the stopped holder left its socket"
}

case_second_agent_on_one_fd_store_refused() {
  # Two agents on one fd store would take each other's listeners: the second is refused in one
  # line naming the first's pid, and the first serves on. Once the first is killed, the store is
  # free again.
  local i first rc=0
  start_agent --fd-store "$WORK/store.sock"
  for i in $(seq 100); do grep -q "gdrproxy agent: serving" "$WORK/agent.log" && break; sleep 0.05; done
  first=$AGENT_PID
  "$GP" agent --socket "$WORK/run/b.sock" --ctl-socket "$WORK/run/b.ctl" --fd-store "$WORK/store.sock" \
    >"$WORK/second.log" 2>&1 || rc=$?
  ((rc == 1)) || { cat "$WORK/second.log"; fail "a second agent on the store exit $rc"; }
  [[ $(wc -l <"$WORK/second.log") == 1 ]] || { cat "$WORK/second.log"; fail "expected one line"; }
  expect_in "$WORK/second.log" "the fd store $WORK/store.sock is used by another agent (pid $first): one agent per store"
  kill -0 "$first" || fail "the first agent is gone"
  kill -KILL "$first"
  wait "$first" 2>/dev/null
  AGENT_PID=
  cp "$WORK/agent.log" "$WORK/agent.1.log"
  start_agent --fd-store "$WORK/store.sock"
  for i in $(seq 100); do grep -q "gdrproxy agent: serving" "$WORK/agent.log" && break; sleep 0.05; done
  expect_in "$WORK/agent.log" "gdrproxy agent: serving"
}

"case_$CASE"
echo "PASS [$CASE]"
