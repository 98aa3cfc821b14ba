#!/usr/bin/env bash
# Integration tests of `gdrproxy run` on this machine's real kernel: real seccomp notification,
# real Landlock, real opens and ioctls. Devices are stand-ins (gdrproxy-testkit standin: real char
# devices borrowed under /dev/infiniband/* and /dev/nvidia* names in a private mount namespace).
# Usage: integration_test.sh GDRPROXY DEVICE_CLIENT CASE
set -uo pipefail
GP=$(realpath "$1")
TK=$(dirname "$GP")/gdrproxy-testkit  # the tests' tool: stand-in devices, exercisers
CLIENT=$(realpath "$2")
CASE=$3
WORK=$(mktemp -d /tmp/gdrproxy-it.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

fail() { echo "FAIL [$CASE]: $*" >&2; exit 1; }
# expect_contains HAYSTACK_FILE NEEDLE
expect_in() { grep -qF -- "$2" "$1" || { echo "--- $1:"; cat "$1"; fail "expected '$2' in $1"; }; }
expect_not_in() { ! grep -qF -- "$2" "$1" || { cat "$1"; fail "did not expect '$2' in $1"; }; }
# sandboxed [run options...] -- command: runs under stand-in devices and gdrproxy run.
sandboxed() { timeout -k 5 60 "$TK" standin "$GP" run "$@"; }
# jq_count FILE PYTHON_EXPR: how many JSON-lines records `r` satisfy the expression.
jq_count() { python3 -c '
import json, sys
print(sum(1 for r in map(json.loads, open(sys.argv[1])) if eval(sys.argv[2])))' "$1" "$2"; }

case_granted_open_and_decoded_trace() {
  sandboxed --grant uverbs0 --stats --trace-json "$WORK/t.jsonl" -- "$TK" exercise uverbs /dev/infiniband/uverbs0 >"$WORK/out" 2>"$WORK/err" || fail "exit $?"
  # --stats splits the ioctls' handling time by phase.
  grep -qE "per ioctl: fd lookup [0-9.]+ us, memory reads [0-9.]+ us, decode [0-9.]+ us, policy [0-9.]+ us, answer [0-9.]+ us, trace [0-9.]+ us" "$WORK/err" ||
    { cat "$WORK/err"; fail "no per-phase handler time"; }
  local fd
  fd=$(sed -n 's|.*open /dev/infiniband/uverbs0 -> fd \([0-9]*\)|\1|p' "$WORK/out")
  [[ -n $fd ]] || fail "the client did not get an fd"
  expect_in "$WORK/out" "INVOKE_WRITE(REG_MR) -> ENOTTY"
  # uverbs fds are opened by the caller itself (the kernel wants the opener's credentials for
  # write() commands); the trace shows the grant decision and the fd the caller got.
  [[ $(jq_count "$WORK/t.jsonl" "r['syscall']=='openat' and r['decision']=='allow' and r['device']=='uverbs0' and r['result']==$fd") == 1 ]] || fail "no granted open with result fd $fd"
  for call in "INVOKE_WRITE(QUERY_DEVICE)" "DEVICE.GET_CONTEXT" "INVOKE_WRITE(ALLOC_PD)" "INVOKE_WRITE(REG_MR)" \
              "MR.REG_DMABUF_MR" "INVOKE_WRITE(CREATE_COMP_CHANNEL)" "CQ.CREATE_CQ" "INVOKE_WRITE(CREATE_QP)" "INVOKE_WRITE(MODIFY_QP)"; do
    # The result comes from the kernel (observed at syscall exit): ENOTTY from the stand-in.
    [[ $(jq_count "$WORK/t.jsonl" "r['call']=='$call' and r['errno']=='ENOTTY' and r['latency_us'] is not None") == 1 ]] || fail "$call not traced with its result"
  done
  [[ $(jq_count "$WORK/t.jsonl" "r['call']=='INVOKE_WRITE(MODIFY_QP)' and r['args']['qp_state']=='RTS'") == 1 ]] || fail "MODIFY_QP state not decoded"
  [[ $(jq_count "$WORK/t.jsonl" "r['call']=='MR.REG_DMABUF_MR' and r['args']['fd']=='-1'") == 1 ]] || fail "REG_DMABUF_MR fd not decoded"
  # An allowed ioctl's caller comes from the observer (read in the caller's context); the open's
  # from /proc: both must name the same process the same way (ids, pid namespace, comm).
  jq -e -s '(map(select(.syscall == "openat"))[0] | {pid, tgid, nspid, pidns, comm}) as $who |
    (map(select(.syscall == "ioctl")) | length > 5 and
      all(.[]; {pid, tgid, nspid, pidns, comm} == $who)) and $who.nspid != $who.pid and $who.pidns > 0' \
    "$WORK/t.jsonl" >/dev/null || fail "the ioctls' caller identity differs from the open's: $(jq -c '{syscall, pid, tgid, nspid, pidns, comm}' "$WORK/t.jsonl" | sort | uniq -c | head -5)"
}

case_ungranted_open_denied() {
  sandboxed --grant uverbs0 -- "$CLIENT" open /dev/infiniband/uverbs1 rdwr >"$WORK/out" 2>"$WORK/err"
  expect_in "$WORK/out" "ERR EACCES"
  expect_in "$WORK/err" "denied open of \"/dev/infiniband/uverbs1\""
  expect_in "$WORK/err" "device uverbs1 is not granted"
  # The configured errno is used.
  echo '{"version":1,"open_errno":"ENODEV"}' >"$WORK/p.json"
  sandboxed --grant uverbs0 --policy "$WORK/p.json" -- "$CLIENT" open /dev/infiniband/uverbs1 rdwr >"$WORK/out2" 2>&1
  expect_in "$WORK/out2" "ERR ENODEV"
}

case_path_tricks_cannot_reach_ungranted_device() {
  sandboxed --grant uverbs0 -q -- "$CLIENT" symlink /dev/infiniband/uverbs1 "$WORK/link" >"$WORK/o1" 2>&1
  expect_in "$WORK/o1" "ERR EACCES"
  sandboxed --grant uverbs0 -q -- "$CLIENT" open /dev/infiniband/../infiniband/./uverbs1 rdwr >"$WORK/o2" 2>&1
  expect_in "$WORK/o2" "ERR EACCES"
  (cd /tmp && sandboxed --grant uverbs0 -q -- "$CLIENT" open ../dev/infiniband/uverbs1 rdwr) >"$WORK/o3" 2>&1
  expect_in "$WORK/o3" "ERR EACCES"
  # O_PATH is not a device fd, but re-opening it through /proc/self/fd must not become one.
  sandboxed --grant uverbs0 -q -- "$CLIENT" opath-reopen /dev/infiniband/uverbs1 >"$WORK/o4" 2>&1
  expect_in "$WORK/o4" "ERR EACCES (re-open)"
  # Read-only and write-only opens are refused too (Landlock in write-trap mode, broker in all-trap mode).
  for mode in rdonly wronly; do
    for trap in write all; do
      sandboxed --grant uverbs0 -q --trap-opens $trap -- "$CLIENT" open /dev/infiniband/uverbs1 $mode >"$WORK/o5" 2>&1
      expect_in "$WORK/o5" "ERR EACCES"
    done
  done
  # The same tricks towards the granted device are brokered.
  sandboxed --grant uverbs0 -q -- "$CLIENT" symlink /dev/infiniband/uverbs0 "$WORK/link" >"$WORK/o6" 2>&1
  expect_in "$WORK/o6" "OK fd="
  sandboxed --grant uverbs0 -q -- "$CLIENT" reopen /dev/infiniband/uverbs0 >"$WORK/o7" 2>&1
  expect_in "$WORK/o7" "OK fd="
  sandboxed --grant uverbs0 -q -- "$CLIENT" open /dev/infiniband/../infiniband/uverbs0 rdwr >"$WORK/o8" 2>&1
  expect_in "$WORK/o8" "OK fd="
}

case_enforce_denies_with_configured_errno() {
  sandboxed --mode enforce --policy "$SRC/configs/policy/deny-reg-mr.json" --trace-json "$WORK/t.jsonl" -- \
    "$TK" exercise uverbs /dev/infiniband/uverbs0 >"$WORK/out" 2>"$WORK/err"
  expect_in "$WORK/out" "INVOKE_WRITE(REG_MR) -> EACCES"
  expect_in "$WORK/out" "INVOKE_WRITE(ALLOC_PD) -> ENOTTY"
  expect_in "$WORK/err" "denied uverbs0 INVOKE_WRITE(REG_MR)"
  [[ $(jq_count "$WORK/t.jsonl" "r['call']=='INVOKE_WRITE(REG_MR)' and r['decision']=='deny' and r['errno']=='EACCES' and 'rule #0' in r['rule']") == 1 ]] || fail "denial not traced"
  # Trace mode observes only: the call runs (the stand-in answers ENOTTY) and the would-be denial is logged.
  sandboxed --mode trace --policy "$SRC/configs/policy/deny-reg-mr.json" -- "$TK" exercise uverbs /dev/infiniband/uverbs0 >"$WORK/out2" 2>"$WORK/err2"
  expect_in "$WORK/out2" "INVOKE_WRITE(REG_MR) -> ENOTTY"
  expect_in "$WORK/err2" "would deny uverbs0 INVOKE_WRITE(REG_MR)"
}

case_malformed_and_unreadable_fail_closed() {
  sandboxed --trace-json "$WORK/t.jsonl" -- "$CLIENT" bad-pointer /dev/infiniband/uverbs0 >"$WORK/out" 2>"$WORK/err"
  expect_in "$WORK/out" "ERR EINVAL"
  [[ $(jq_count "$WORK/t.jsonl" "r.get('malformed','').startswith('header unreadable') and r['decision']=='deny'") == 1 ]] || fail "unreadable header not denied"
  sandboxed --mode trace --trace-json "$WORK/t2.jsonl" -- "$CLIENT" bad-pointer /dev/infiniband/uverbs0 >"$WORK/out2" 2>&1
  # Trace mode lets the call run: the kernel answers (the stand-in device says ENOTTY).
  expect_in "$WORK/out2" "ERR ENOTTY"
}

# Trap copies (the caller's device and argument bytes copied at its trap by a BPF program) judge
# every call as gdrproxy's own lookups do: the same decisions, errnos and decoded records with and
# without them, an unreadable argument still refused as malformed, and --stats says how many
# calls had a copy. Needs the program to load on this kernel (--trap-copy on refuses otherwise).
case_trap_copies_judge_as_lookups_do() {
  "$GP" run -q --trap-copy on -- true 2>"$WORK/why" || { cat "$WORK/why"; echo "SKIP: this kernel refuses the trap-copy program" >&2; exit 77; }
  local tc
  for tc in on off; do
    sandboxed --trap-copy "$tc" --stats --policy "$SRC/configs/policy/deny-reg-mr.json" --trace-json "$WORK/$tc.jsonl" -- \
      "$TK" exercise uverbs /dev/infiniband/uverbs0 >"$WORK/$tc.out" 2>"$WORK/$tc.err"
    expect_in "$WORK/$tc.out" "INVOKE_WRITE(REG_MR) -> EACCES"
    expect_in "$WORK/$tc.out" "INVOKE_WRITE(ALLOC_PD) -> ENOTTY"
    expect_in "$WORK/$tc.out" "malformed header (length off by 8) -> EINVAL"
    expect_in "$WORK/$tc.err" "denied uverbs0 INVOKE_WRITE(REG_MR)"
    # Addresses and handles differ from run to run (ASLR): the arguments are compared by name.
    jq -c '{call, decision, errno, device, malformed, args: ((.args // {}) | keys)}' "$WORK/$tc.jsonl" | sort >"$WORK/$tc.calls"
  done
  # --trap-copy on loads the program before the command starts: every call had its copy.
  local n
  n=$(sed -n 's/.*served [0-9]* notifications: \([0-9]*\) ioctl.*/\1/p' "$WORK/on.err")
  expect_in "$WORK/on.err" "trap copies: $n of $n trapped ioctl(s) judged from the copy"
  expect_not_in "$WORK/off.err" "trap copies:"
  diff "$WORK/on.calls" "$WORK/off.calls" >"$WORK/diff" || { cat "$WORK/diff"; fail "calls judged or decoded differently with trap copies"; }
  # An argument the program cannot copy (an unmapped address) is read by gdrproxy, and refused.
  sandboxed --trap-copy on --trace-json "$WORK/bad.jsonl" -- "$CLIENT" bad-pointer /dev/infiniband/uverbs0 >"$WORK/bad" 2>&1
  expect_in "$WORK/bad" "ERR EINVAL"
  [[ $(jq_count "$WORK/bad.jsonl" "r.get('malformed','').startswith('header unreadable') and r['decision']=='deny'") == 1 ]] || fail "unreadable header not denied with trap copies"
}

# Two callers whose copies share a slot (host ids equal modulo the slot count), trapping at once
# with the same fd number, request and argument address: only the notification's id and the
# caller tell their copies apart. One's calls are denied (REG_MR), the other's allowed
# (ALLOC_PD); a call judged by the other's copy gets the other's verdict.
case_trap_copies_keep_colliding_callers_apart() {
  "$GP" run -q --trap-copy on -- true 2>"$WORK/why" || { cat "$WORK/why"; echo "SKIP: this kernel refuses the trap-copy program" >&2; exit 77; }
  # The client learns its id in our pid namespace (the slot's) from this server: SO_PEERCRED.
  python3 -c '
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
s.listen(64)
while True:
    c, _ = s.accept()
    pid = struct.unpack("3i", c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
    c.sendall(str(pid).encode())
    c.close()' "$WORK/peer.sock" &
  local server=$! used total
  # shellcheck disable=SC2064 # the server's pid is fixed now; the function's locals are gone at exit
  trap "kill $server 2>/dev/null; rm -rf '$WORK'" EXIT
  for _ in $(seq 100); do [[ -S $WORK/peer.sock ]] && break; sleep 0.05; done
  [[ -S $WORK/peer.sock ]] || fail "the pid server did not start"
  sandboxed --trap-copy on --stats --policy "$SRC/configs/policy/deny-reg-mr.json" -- \
    "$CLIENT" slot-collide /dev/infiniband/uverbs0 "$WORK/peer.sock" 20000 >"$WORK/out" 2>"$WORK/err"
  if grep -q '^NONE' "$WORK/out"; then
    echo "SKIP: $(cat "$WORK/out")" >&2
    exit 77
  fi
  expect_in "$WORK/out" "OK slot-collide"
  # The two did trap at once: copies were overwritten before they were taken (the rest looked
  # up), so the labels were what kept them apart.
  read -r used total < <(sed -n 's/.*trap copies: \([0-9]*\) of \([0-9]*\) trapped.*/\1 \2/p' "$WORK/err")
  [[ -n ${total:-} ]] || { cat "$WORK/err"; fail "no trap-copy count in --stats"; }
  if ((used == total)); then
    echo "SKIP: the two callers never overwrote each other's copy ($used of $total used)" >&2
    exit 77
  fi
}

case_threads_are_named() {
  # ps, top, perf and gdb tell the threads apart: the main thread (the engine's loop) stays
  # "gdrproxy" whichever way the trap copies load, a session's loop is "gdrproxy-sess", its
  # listener's receiver "gdrproxy-recv", a trace writer "gdrproxy-json".
  local tc p names
  for tc in on auto off; do
    "$GP" run -q --trap-copy "$tc" --trace-json "$WORK/t.jsonl" -- sleep 2 2>"$WORK/err.$tc" &
    p=$!
    names=
    for _ in $(seq 50); do
      names=$(cat /proc/$p/task/*/comm 2>/dev/null | sort | tr '\n' ' ')
      [[ $names == *gdrproxy-json* && $names == *gdrproxy-sess* && $names == *gdrproxy-recv* ]] && break
      sleep 0.05
    done
    wait "$p"
    [[ $names == *gdrproxy-sess* && $names == *gdrproxy-json* && $names == *gdrproxy-recv* ]] || fail "--trap-copy $tc: threads '$names'"
    [[ " $names" == *" gdrproxy "* ]] || fail "--trap-copy $tc: no thread named gdrproxy (the main thread renamed?): '$names'"
  done
}

case_receivers_leave_and_ignore_stray_signals() {
  # A listener's receiver waits in RECV, which the kernel does not end when the last task using
  # the filter exits: gdrproxy sees the hang-up in an epoll set and interrupts RECV with a signal
  # (SIGRTMIN+3), repeated until the receiver has left. A sandbox whose last call comes just
  # before it exits puts the receiver between that call and its next RECV as the signal comes:
  # each such run must still end (one lost interrupt hangs it until the timeout).
  local i rc p
  for i in $(seq 40); do
    timeout -k 2 10 "$TK" standin "$GP" run -q -- "$CLIENT" ioctl /dev/infiniband/uverbs0 >"$WORK/out" 2>&1
    rc=$?
    ((rc == 0)) || { cat "$WORK/out"; fail "run $i did not end by itself (exit $rc)"; }
  done
  # From kernel 6.6 on, RECV on a listener no task uses returns ENOENT at once (it no longer
  # blocks): a receiver that took that for a caller that died would spin in RECV until the loop
  # saw the hang-up (hundreds of times on a busy 2-CPU guest). One such ENOENT is its last RECV.
  if command -v strace >/dev/null; then
    "$TK" standin strace -f -qq -e trace=ioctl -e signal=none -o "$WORK/strace" \
      "$GP" run -q -- "$CLIENT" ioctl /dev/infiniband/uverbs0 >"$WORK/out" 2>&1 || { cat "$WORK/out"; fail "run under strace failed"; }
    local empty
    empty=$(grep -E 'SECCOMP_IOCTL_NOTIF_RECV|0xc0502100' "$WORK/strace" | grep -c ENOENT)
    ((empty <= 1)) || { grep -E 'NOTIF_RECV|0xc0502100' "$WORK/strace"; fail "$empty RECVs returned ENOENT on one listener: the receiver spun after its hang-up"; }
  fi
  # The same signal sent to gdrproxy from outside, while calls are served, fails none of them
  # and stops nothing.
  "$TK" standin "$GP" run -q --stats -- sh -c "
    for i in \$(seq 400); do $CLIENT ioctl /dev/infiniband/uverbs0 | grep -q ENOTTY || exit 9; done" \
    >"$WORK/out" 2>"$WORK/err" &
  p=$!
  sleep 0.3
  for i in $(seq 300); do kill -s RTMIN+3 "$p" 2>/dev/null || break; sleep 0.002; done
  ((i > 100)) || fail "gdrproxy was gone after $i signals"
  timeout 60 tail --pid="$p" -f /dev/null || fail "gdrproxy did not end"
  wait "$p"
  rc=$?
  ((rc == 0)) || { cat "$WORK/err"; fail "the command failed under stray signals (exit $rc)"; }
  expect_in "$WORK/err" "served 800 notifications: 400 ioctl, 400 open"
}

case_high_bits_do_not_bypass_the_filter() {
  sandboxed --mode enforce --policy "$SRC/configs/policy/deny-reg-mr.json" --trace-json "$WORK/t.jsonl" -- \
    "$CLIENT" high-bits /dev/infiniband/uverbs0 >"$WORK/out" 2>&1
  [[ $(jq_count "$WORK/t.jsonl" "r['call']=='INVOKE_WRITE(ALLOC_PD)'") == 1 ]] || fail "ioctl with high bits set was not trapped"
}

case_children_and_grandchildren_are_covered() {
  sandboxed --grant uverbs0 --trace-json "$WORK/t.jsonl" -- "$CLIENT" fork-tree /dev/infiniband/uverbs0 >"$WORK/out" 2>&1
  n=$(python3 -c "
import json
print(len({r['pid'] for r in map(json.loads, open('$WORK/t.jsonl')) if r['call']=='INVOKE_WRITE(ALLOC_PD)'}))")
  [[ $n == 3 ]] || fail "expected ALLOC_PD from 3 processes, saw $n"
  [[ $(jq_count "$WORK/t.jsonl" "r['syscall']=='openat' and r['device']=='uverbs0' and r['decision']=='allow'") == 3 ]] || fail "expected 3 granted opens"
}

case_same_pid_in_two_pid_namespaces() {
  # Both clients are pid 1 in their own pid namespace; the trace must keep them apart. The
  # sandbox has no CAP_SYS_ADMIN (dropped by default), so they get their pid namespaces the way
  # an unprivileged tenant would: inside a user namespace.
  sandboxed --trace-json "$WORK/t.jsonl" -- sh -c "
    unshare --user --map-root-user --pid --fork $CLIENT ioctl /dev/infiniband/uverbs0 &
    unshare --user --map-root-user --pid --fork $CLIENT ioctl /dev/infiniband/uverbs0
    wait" >"$WORK/out" 2>&1 || fail "exit $?"
  python3 - "$WORK/t.jsonl" <<'PY' || fail "pid namespaces mixed"
import json, sys
recs = [r for r in map(json.loads, open(sys.argv[1])) if r['call'] == 'INVOKE_WRITE(ALLOC_PD)']
assert len(recs) == 2, recs
assert all(r['nspid'] == 1 for r in recs), [r['nspid'] for r in recs]
assert len({r['pidns'] for r in recs}) == 2, "same pidns"
assert len({r['pid'] for r in recs}) == 2
PY
}

case_traced_from_a_nested_pid_namespace() {
  # gdrproxy itself in a pid namespace of its own (as in a container without the host's pids):
  # the BPF observer must know callers by the ids gdrproxy sees, not the host's. Before, no
  # result was ever observed there, and a host task that merely had the same number would have
  # been observed instead.
  timeout -k 5 60 "$TK" standin unshare --pid --fork --mount-proc "$GP" run -q --trace-json "$WORK/t.jsonl" -- \
    "$TK" exercise uverbs /dev/infiniband/uverbs0 >"$WORK/out" 2>"$WORK/err" || { rc=$?; cat "$WORK/err"; fail "exit $rc"; }
  expect_not_in "$WORK/err" "results of allowed calls will not be shown"
  [[ $(jq_count "$WORK/t.jsonl" "r['call']=='INVOKE_WRITE(ALLOC_PD)' and r['errno']=='ENOTTY' and r.get('note') is None") == 1 ]] ||
    fail "ALLOC_PD's result not observed: $(jq -c 'select(.syscall == "ioctl") | {call, errno, note}' "$WORK/t.jsonl" | head -3)"
  jq -e -s '(map(select(.syscall == "openat"))[0] | {pid, tgid, nspid, pidns, comm}) as $who |
    map(select(.syscall == "ioctl")) | length > 5 and all(.[]; {pid, tgid, nspid, pidns, comm} == $who)' \
    "$WORK/t.jsonl" >/dev/null || fail "the ioctls' caller identity differs from the open's"
}

case_exit_status_and_signals() {
  sandboxed -q -- sh -c 'exit 7'; [[ $? == 7 ]] || fail "exit status not passed through"
  sandboxed -q -- sh -c 'kill -KILL $$'; [[ $? == 137 ]] || fail "signal death not reported as 128+9"
  timeout -k 5 60 "$GP" run -q -- sleep 30 &
  local sup=$!
  sleep 1
  kill -TERM $sup
  wait $sup; local rc=$?
  [[ $rc == 143 ]] || fail "SIGTERM not forwarded (exit $rc)"
  sandboxed -q -- /nonexistent/cmd 2>"$WORK/err"; [[ $? == 127 ]] || fail "missing command not 127"
  expect_in "$WORK/err" "cannot execute /nonexistent/cmd"
}

case_ordinary_opens_do_not_trap() {
  # write-trap mode (the default where Landlock checks device ioctls, ABI >= 5; asked for here so
  # that older kernels check it too): only the shell's O_WRONLY redirect reaches gdrproxy.
  sandboxed --trace --trap-opens write -- sh -c 'cat /etc/hostname /etc/passwd /etc/group >/dev/null' 2>"$WORK/err" >/dev/null
  expect_in "$WORK/err" "notifications: 0 ioctl, 1 open (0 brokered)"
  sandboxed --trace --trap-opens all -- sh -c 'cat /etc/hostname /etc/passwd /etc/group >/dev/null' 2>"$WORK/err2" >/dev/null
  n=$(sed -n 's/.* 0 ioctl, \([0-9]*\) open.*/\1/p' "$WORK/err2")
  [[ ${n:-0} -gt 5 ]] || fail "all-open mode should trap every open (saw ${n:-none})"
}

case_nvidia_calls_are_decoded() {
  sandboxed --trace-json "$WORK/t.jsonl" -- "$TK" exercise nvidia /dev/nvidiactl /dev/nvidia-uvm >"$WORK/out" 2>&1 || fail "exit $?"
  [[ $(jq_count "$WORK/t.jsonl" "r['device']=='nvidiactl' and r['call'].startswith('RM_ALLOC')") == 1 ]] || fail "RM_ALLOC not decoded"
  [[ $(jq_count "$WORK/t.jsonl" "r['device']=='nvidiactl' and r['call'].startswith('RM_CONTROL')") == 1 ]] || fail "RM_CONTROL not decoded"
  [[ $(jq_count "$WORK/t.jsonl" "r['device']=='nvidia-uvm' and r['call']=='UVM_INITIALIZE'") == 1 ]] || fail "UVM_INITIALIZE not decoded"
  # NVIDIA nodes are brokered: opened by gdrproxy, the fd injected.
  [[ $(jq_count "$WORK/t.jsonl" "r['device']=='nvidiactl' and r['syscall']=='openat' and r['decision']=='broker' and r['result']>=0") == 1 ]] || fail "nvidiactl open not brokered"
}

case_kernel_allow_runs_only_unconditional_calls() {
  # Enforce mode without a trace: RM_FREE and UVM_INITIALIZE (allowed whatever their parameters)
  # run in the kernel, untrapped; RM_ALLOC and RM_CONTROL (whose parameters name a class and a
  # control) reach gdrproxy.
  local run=("$TK" exercise nvidia /dev/nvidiactl /dev/nvidia-uvm)
  sandboxed --stats -- "${run[@]}" >"$WORK/out" 2>"$WORK/err" || fail "exit $?"
  expect_in "$WORK/out" "RM_FREE -> "
  expect_in "$WORK/err" "notifications: 2 ioctl,"
  expect_in "$WORK/err" "in the kernel, never trapped:"
  # Off, with a trace, or in trace mode every device ioctl traps.
  sandboxed --stats --kernel-allow off -- "${run[@]}" >/dev/null 2>"$WORK/err2"
  expect_in "$WORK/err2" "notifications: 4 ioctl,"
  expect_not_in "$WORK/err2" "in the kernel"
  sandboxed --stats --trace-json "$WORK/t.jsonl" -- "${run[@]}" >/dev/null 2>"$WORK/err3"
  expect_in "$WORK/err3" "notifications: 4 ioctl,"
  [[ $(jq_count "$WORK/t.jsonl" "r['call'] in ('RM_FREE', 'UVM_INITIALIZE')") == 2 ]] || fail "untraced calls"
  sandboxed --stats --mode trace -- "${run[@]}" >/dev/null 2>"$WORK/err4"
  expect_in "$WORK/err4" "notifications: 4 ioctl,"
  # A rule on RM_FREE keeps it trapped, and it is denied.
  echo '{"version":1,"classes":{"nvidia":{"rules":[{"action":"deny","escape":"RM_FREE"}]}}}' >"$WORK/p.json"
  sandboxed --stats --policy "$WORK/p.json" -- "${run[@]}" >"$WORK/out5" 2>"$WORK/err5"
  expect_in "$WORK/out5" "RM_FREE -> EPERM"
  expect_in "$WORK/err5" "denied nvidiactl RM_FREE"
  expect_in "$WORK/err5" "notifications: 3 ioctl,"
  # One GPU not granted: an fd of it must trap, so no frontend escape skips gdrproxy.
  sandboxed --stats --grant nvidiactl,nvidia-uvm,nvidia0 -- "${run[@]}" >/dev/null 2>"$WORK/err6"
  expect_in "$WORK/err6" "notifications: 3 ioctl,"
  # Trapped, it is allowed on the granted nvidiactl without its parameters being read (RM_FREE
  # only: UVM_INITIALIZE runs untrapped, RM_ALLOC/RM_CONTROL are read and judged)...
  expect_in "$WORK/err6" "1 trapped ioctl(s) allowed without reading their parameters"
  # ...but never on the ungranted GPU (an inherited fd of nvidia1), nor unread when traced.
  timeout -k 5 60 "$TK" standin bash -c 'exec 7<>/dev/nvidia1 && exec "$@"' _ "$GP" run --stats \
    --grant nvidiactl,nvidia-uvm,nvidia0 -- "$(dirname "$CLIENT")/../security/attack_client" fdioctl 7 0xc0104629 \
    >"$WORK/out7" 2>"$WORK/err7" || true
  expect_in "$WORK/out7" "fdioctl ERR EACCES"
  expect_in "$WORK/err7" "device nvidia1 is not granted"
  expect_not_in "$WORK/err7" "allowed without reading"
  sandboxed --stats --kernel-allow off --trace-json "$WORK/t8.jsonl" -- "${run[@]}" >/dev/null 2>"$WORK/err8"
  expect_not_in "$WORK/err8" "allowed without reading"
}

case_lsm_judge_starts_or_says_why() {
  # --lsm on: where this kernel runs BPF LSM programs the judge is loaded and counted in --stats
  # (its refusals are tested in the VM stage, tests/vm/lsm.sh); where it cannot (this build
  # machine: EPERM for every process), gdrproxy refuses to start in one line that names the BPF
  # LSM, and the command never runs. --lsm auto falls back with a note: calls trap as without it.
  local grant=nvidiactl,nvidia-uvm,nvidia0 rc=0
  sandboxed --lsm on --stats --grant $grant -- touch "$WORK/ran" >"$WORK/out" 2>"$WORK/err" || rc=$?
  if grep -q "judged in the kernel (BPF LSM)" "$WORK/err"; then
    [[ $rc == 0 && -e $WORK/ran ]] || fail "judge loaded but the command failed ($rc)"
  else
    [[ $rc == 125 ]] || fail "--lsm on without a usable BPF LSM: exit $rc, not 125"
    [[ ! -e $WORK/ran ]] || fail "the command ran although the judge could not be loaded"
    [[ $(wc -l <"$WORK/err") == 1 ]] || fail "not one line: $(cat "$WORK/err")"
    expect_in "$WORK/err" "--lsm on: "
    grep -q "BPF LSM" "$WORK/err" || fail "the refusal does not name the BPF LSM"
  fi
  sandboxed --lsm auto --stats --grant $grant -- "$TK" exercise nvidia /dev/nvidiactl /dev/nvidia-uvm \
    >"$WORK/out2" 2>"$WORK/err2" || fail "--lsm auto exit $?"
  if grep -q "judged in the kernel (BPF LSM)" "$WORK/err2"; then
    expect_in "$WORK/err2" "notifications: 2 ioctl,"
  else
    expect_in "$WORK/err2" "--lsm auto: "
    expect_in "$WORK/err2" "notifications: 3 ioctl,"
  fi
  "$GP" run --lsm sometimes -- true >/dev/null 2>&1 && fail "--lsm sometimes accepted"
  return 0
}

case_stalled_trace_reader_stalls_no_call() {
  # --trace-json into a pipe whose reader never reads: once the pipe is full the file takes no
  # more bytes. The records are written by the writer's own thread, so the sandbox's 3000 ioctls
  # are still served, gdrproxy exits (its wait for the file is bounded) and says how many records
  # it dropped. Before the writer thread, the session thread blocked in fwrite and every caller
  # with it: the run never ended.
  local bench reader rc=0
  bench=$(dirname "$GP")/tests/bench/ioctl_bench
  [[ -x $bench ]] || fail "no $bench"
  mkfifo "$WORK/fifo"
  # shellcheck disable=SC2217 # the redirection opens the read end; sleep never reads it
  sleep 120 <"$WORK/fifo" &
  reader=$!
  timeout -k 5 60 "$TK" standin "$GP" run --trace-json "$WORK/fifo" -- "$bench" client 3000 /dev/infiniband/uverbs0 \
    >"$WORK/out" 2>"$WORK/err" || rc=$?
  kill "$reader" 2>/dev/null
  wait "$reader" 2>/dev/null
  [[ $rc == 0 ]] || { cat "$WORK/err"; fail "run exit $rc (124: stalled by the trace file)"; }
  grep -Eq '^[0-9.]+$' "$WORK/out" || fail "the client did not finish its calls: $(cat "$WORK/out")"
  expect_in "$WORK/err" "trace records dropped"
}

case_trace_summarize() {
  sandboxed --trace-json "$WORK/t.jsonl" -- "$TK" exercise uverbs /dev/infiniband/uverbs0 >/dev/null 2>&1
  "$GP" trace summarize "$WORK/t.jsonl" >"$WORK/sum" || fail "summarize failed"
  expect_in "$WORK/sum" "INVOKE_WRITE(REG_MR)"
  grep -E '^uverbs +INVOKE_WRITE\(REG_MR\) +1 +1 +0 ' "$WORK/sum" >/dev/null || { cat "$WORK/sum"; fail "row"; }
  if "$GP" trace summarize /nonexistent 2>"$WORK/err"; then fail "missing file accepted"; fi
}

case_observers_attach_where_no_tracefs_is_mounted() {
  # A host without tracefs (this build machine, a minimal node): gdrproxy mounts one for its BPF
  # observers' attach, which two observers of one run do side by side. Mounted where the other
  # thread could see it, the first one's unmount took it from under the second, whose attach then
  # failed (ENOENT) and the run showed no results of allowed calls. Here: a mount namespace with no
  # tracefs (private: the host keeps its own), eight runs one after the other, each with the
  # observers attached, and no tracefs left behind.
  if [[ -z ${GDRPROXY_IT_NO_TRACEFS:-} ]]; then
    GDRPROXY_IT_NO_TRACEFS=1 exec unshare -m --propagation private "$0" "$GP" "$CLIENT" "$CASE"
  fi
  local m
  for m in /sys/kernel/debug/tracing /sys/kernel/tracing /sys/kernel/debug; do umount -l "$m" 2>/dev/null; done
  [[ -e /sys/kernel/tracing/events || -e /sys/kernel/debug/tracing/events ]] && fail "tracefs is still mounted here"
  local i
  for i in $(seq 8); do
    sandboxed --trace-json "$WORK/t$i.jsonl" -- "$TK" exercise uverbs /dev/infiniband/uverbs0 >/dev/null 2>"$WORK/err$i"
    expect_not_in "$WORK/err$i" "will not be shown"
    # REG_MR fails on the stand-in device: its result is known only through the exit observer.
    [[ $(jq_count "$WORK/t$i.jsonl" "r['call']=='INVOKE_WRITE(REG_MR)' and r.get('result') == -1") == 1 ]] ||
      fail "run $i: REG_MR's failure is not in the trace"
  done
  [[ -z $(findmnt -n -t tracefs) ]] || fail "a tracefs mount was left: $(findmnt -n -t tracefs)"
}

case_rdma_cm_opened_by_caller_writes_untrapped() {
  # rdma_cm commands are write()s that the kernel accepts only from the opener's credentials:
  # a granted rdma_cm node is opened by the caller, and none of its writes reach gdrproxy.
  # (Write-trap mode asked for: where Landlock cannot check device ioctls every open traps.)
  sandboxed --stats --trap-opens write --trace-json "$WORK/t.jsonl" -- "$CLIENT" cm-write /dev/infiniband/rdma_cm 50 >"$WORK/out" 2>"$WORK/err"
  expect_in "$WORK/out" "OK cm fd="
  expect_in "$WORK/err" "served 2 notifications: 0 ioctl, 2 open (0 brokered)"   # rdma_cm and /dev/null
  fd=$(sed -n 's/^OK cm fd=\([0-9]*\).*/\1/p' "$WORK/out")
  [[ $(jq_count "$WORK/t.jsonl" "r['device']=='rdma_cm' and r['decision']=='allow' and r['result']==$fd") == 1 ]] || fail "rdma_cm open not traced with fd $fd"
  # Its command write is observed in the kernel (never trapped) and traced with its result; the
  # 50 writes to /dev/null are not.
  [[ $(jq_count "$WORK/t.jsonl" "r['syscall']=='write' and r['call']=='CREATE_ID' and r['args']['ps']=='TCP' and r['fd']==$fd and r['decision']=='observed' and r['result'] is not None") == 1 ]] || fail "CREATE_ID not observed"
  [[ $(jq_count "$WORK/t.jsonl" "r['syscall']=='write'") == 1 ]] || fail "other writes were traced"
  # A process's watched fds are unwatched in the observer's map once it has exited (the sweep,
  # each second), not left to fill it for the rest of a long-running agent.
  sandboxed --stats --trace-json "$WORK/t2.jsonl" -- sh -c "$CLIENT cm-write /dev/infiniband/rdma_cm 0 && sleep 2.5" >"$WORK/out4" 2>"$WORK/err4"
  expect_in "$WORK/out4" "OK cm fd="
  grep -q "observer: [1-9][0-9]* fd watch(es) removed after their process exited" "$WORK/err4" || { cat "$WORK/err4"; fail "the exited client's rdma_cm fd stayed watched"; }
  # Not granted: refused, by the broker and (for a swapped path) by Landlock.
  sandboxed -q --grant uverbs0 -- "$CLIENT" cm-write /dev/infiniband/rdma_cm 0 >"$WORK/out2" 2>&1
  expect_in "$WORK/out2" "ERR EACCES (open)"
  sandboxed -q --grant uverbs0 -- "$CLIENT" symlink /dev/infiniband/rdma_cm "$WORK/cm" >"$WORK/out3" 2>&1
  expect_in "$WORK/out3" "ERR EACCES"
}

case_dmabuf_provenance() {
  # A REG_DMABUF_MR whose fd is not a dma-buf from a granted GPU is refused before it runs...
  sandboxed --trace-json "$WORK/t.jsonl" -- "$CLIENT" reg-dmabuf /dev/infiniband/uverbs0 memfd >"$WORK/out" 2>"$WORK/err"
  expect_in "$WORK/out" "ERR EPERM (reg-dmabuf)"
  expect_in "$WORK/err" "is not a dma-buf (/memfd:not-a-dmabuf"
  [[ $(jq_count "$WORK/t.jsonl" "r['call']=='MR.REG_DMABUF_MR' and r['decision']=='deny' and 'provenance' in r['rule']") == 1 ]] || fail "denial not traced"
  # ...while NCCL's capability probe (fd -1) runs (the stand-in device answers ENOTTY).
  sandboxed -q -- "$CLIENT" reg-dmabuf /dev/infiniband/uverbs0 -1 >"$WORK/out2" 2>&1
  expect_in "$WORK/out2" "ERR ENOTTY (reg-dmabuf)"
  # A policy without exporters disables the check.
  echo '{"version":1,"classes":{"uverbs":{"dmabuf_exporters":[]}}}' >"$WORK/p.json"
  sandboxed -q --policy "$WORK/p.json" -- "$CLIENT" reg-dmabuf /dev/infiniband/uverbs0 memfd >"$WORK/out3" 2>&1
  expect_in "$WORK/out3" "ERR ENOTTY (reg-dmabuf)"
}

case_newer_verbs_dmabuf_provenance() {
  # The verbs newer kernels added that hand the device a dma-buf get the same check: MR.REG_MR's
  # fd, a CQ's buffer fd, a QP's second buffer descriptor (the first, fd -1, passes).
  for v in reg-mr cq-buffer qp-umem; do
    sandboxed -- "$CLIENT" newer-dmabuf /dev/infiniband/uverbs0 $v >"$WORK/out-$v" 2>"$WORK/err-$v"
    expect_in "$WORK/out-$v" "ERR EPERM (newer-dmabuf $v)"
    expect_in "$WORK/err-$v" "is not a dma-buf (/memfd:not-a-dmabuf"
  done
  # Capability fds at GET_CONTEXT and a core attribute no table names: unknown, refused.
  sandboxed -- "$CLIENT" newer-dmabuf /dev/infiniband/uverbs0 ucap >"$WORK/out-ucap" 2>"$WORK/err-ucap"
  expect_in "$WORK/out-ucap" "ERR EPERM (newer-dmabuf ucap)"
  expect_in "$WORK/err-ucap" "capability_fds grant the context capabilities the policy cannot judge"
  sandboxed -- "$CLIENT" newer-dmabuf /dev/infiniband/uverbs0 unnamed-attr >"$WORK/out-u" 2>"$WORK/err-u"
  expect_in "$WORK/out-u" "ERR EPERM (newer-dmabuf unnamed-attr)"
  expect_in "$WORK/err-u" "attribute 2047 is none the tables name for this method"
}

# with_nvidia_version TEXT CMD...: runs CMD in a private mount namespace whose
# /proc/driver/nvidia/version reads TEXT (a tmpfs over /proc/driver: a stand-in for the driver's
# version file only, so that a version the ABI tables do not know can be shown on any machine).
with_nvidia_version() {
  local text=$1; shift
  mkdir -p "$WORK/driver/nvidia"
  printf '%s\n' "$text" >"$WORK/driver/nvidia/version"
  # shellcheck disable=SC2016 # $0 and $@ are the inner shell's
  unshare --mount --propagation private sh -c 'mount --bind "$0" /proc/driver && exec "$@"' "$WORK/driver" "$@"
}

nvrm_line() {
  printf 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  (dvs-builder@U16-I3-C01-4-2)  Thu Jan  1 00:00:00 UTC 2026' "$1"
}

# Enforce mode with a policy denying RM_ALLOC, on a stand-in nvidiactl whose driver says
# version $1; the remaining arguments go to `gdrproxy run` before the command.
enforce_on_driver() {
  local v=$1; shift
  echo '{"version":1,"classes":{"nvidia":{"rules":[{"action":"deny","escape":"RM_ALLOC"}]}}}' >"$WORK/p.json"
  with_nvidia_version "$(nvrm_line "$v")" timeout -k 5 60 "$TK" standin "$GP" run --mode enforce --policy "$WORK/p.json" "$@" -- "$TK" exercise nvidia /dev/nvidiactl >"$WORK/out" 2>"$WORK/err"
}

case_every_release_of_the_tables_is_enforced() {
  # Every release the generated tables hold starts in enforce mode, with no notice, and
  # enforces: the denied RM_ALLOC is refused (EPERM), not answered by the stand-in (EINVAL).
  local releases n=0
  releases=$(sed -n 's/^    {"\([0-9.]*\)", ".*/\1/p' "$SRC/proxy/abi/generated/nvidia_releases.inc")
  [[ $(wc -l <<<"$releases") -ge 132 ]] || fail "expected every generated release, got: $releases"
  for v in $releases; do
    enforce_on_driver "$v" || { cat "$WORK/err"; fail "enforce mode did not start on $v"; }
    grep -q "RM_ALLOC(NV01_ROOT_CLIENT) -> EPERM" "$WORK/out" || { cat "$WORK/out" "$WORK/err"; fail "$v: RM_ALLOC not refused"; }
    if grep -q "ABI tables\|nearest lower" "$WORK/err"; then cat "$WORK/err"; fail "$v: a notice for a release the tables hold"; fi
    n=$((n + 1))
  done
  echo "enforced on $n releases"
}

case_next_patch_of_a_branch_is_enforced_with_a_notice() {
  # A later patch of a branch the tables hold runs enforced on the branch's nearest lower
  # release, with one line saying so.
  local newest
  for pair in 535.288.02:535.288.01 580.178.04:580.173.02 595.45.10:595.45.04 580.100.01:580.95.05; do
    local v=${pair%%:*} base=${pair##*:}
    enforce_on_driver "$v" || { cat "$WORK/err"; fail "enforce mode did not start on $v"; }
    expect_in "$WORK/err" "NVIDIA driver $v is not in this build's tables: enforcing with $base's, the nearest lower release of branch ${v%%.*}"
    [[ $(grep -c "nearest lower release" "$WORK/err") == 1 ]] || fail "$v: expected one notice line"
    expect_in "$WORK/out" "RM_ALLOC(NV01_ROOT_CLIENT) -> EPERM"
  done
}

case_new_branch_is_refused_unless_tables_are_named() {
  # A branch the tables do not hold: enforce mode refuses to start and says how to go on, in one
  # line; --nvidia-abi-as names the tables to judge it with (enforced, with its notice);
  # --allow-unknown-nvidia-driver runs NVIDIA calls trace-only.
  enforce_on_driver 610.57.04 -q
  [[ $? == 125 ]] || fail "enforce mode started on an uncovered branch"
  [[ $(wc -l <"$WORK/err") == 1 ]] || { cat "$WORK/err"; fail "expected one line"; }
  expect_in "$WORK/err" "NVIDIA driver 610.57.04 is of a branch this build's ABI tables do not hold (they hold 535, "
  expect_in "$WORK/err" "--nvidia-abi-as RELEASE"
  expect_in "$WORK/err" "--allow-unknown-nvidia-driver"
  # Older than the first release of a held branch is not a later patch of it either.
  enforce_on_driver 580.1.01
  [[ $? == 125 ]] || fail "enforce mode started on a release older than its branch's first"
  enforce_on_driver 610.57.04 --nvidia-abi-as 595.45.04 || { cat "$WORK/err"; fail "--nvidia-abi-as did not start"; }
  expect_in "$WORK/err" "NVIDIA driver 610.57.04: enforcing with the tables of 595.45.04, as the operator named them"
  expect_in "$WORK/out" "RM_ALLOC(NV01_ROOT_CLIENT) -> EPERM"
  enforce_on_driver 610.57.04 --nvidia-abi-as 999.1.1
  [[ $? == 125 ]] || fail "--nvidia-abi-as accepted a release the tables lack"
  expect_in "$WORK/err" "--nvidia-abi-as 999.1.1: this build has no tables for that release"
  enforce_on_driver 610.57.04 --allow-unknown-nvidia-driver || fail "--allow-unknown-nvidia-driver did not start"
  expect_in "$WORK/err" "NVIDIA driver 610.57.04 is not in this build's ABI tables: NVIDIA calls are traced with 595."
  expect_in "$WORK/err" "driver not in the ABI tables, would deny nvidiactl RM_ALLOC"
  expect_in "$WORK/out" "RM_ALLOC(NV01_ROOT_CLIENT) -> EINVAL"   # ran: the stand-in answered
}

case_no_nvidia_driver_no_nvidia_note() {
  # No NVIDIA driver loaded (stand-in nodes only): nothing is said about NVIDIA, and the policy
  # is enforced with the newest tables.
  [[ -e /proc/driver/nvidia ]] && { echo "SKIP: a real NVIDIA driver is loaded"; exit 77; }
  echo '{"version":1,"classes":{"nvidia":{"rules":[{"action":"deny","escape":"RM_ALLOC"}]}}}' >"$WORK/p.json"
  sandboxed --mode enforce --policy "$WORK/p.json" -- "$TK" exercise nvidia /dev/nvidiactl >"$WORK/out" 2>"$WORK/err"
  expect_not_in "$WORK/err" "NVIDIA driver"
  expect_not_in "$WORK/err" "ABI tables"
  expect_in "$WORK/out" "RM_ALLOC(NV01_ROOT_CLIENT) -> EPERM"
  expect_in "$WORK/err" "denied nvidiactl RM_ALLOC"
}

case_repeated_denials_logged_once() {
  # One process retrying a refused open gets one line; the repeats are counted in --stats.
  # The shell opens it 5 times itself (`true` is a builtin: no new process), then one client.
  sandboxed --grant uverbs0 --stats -- sh -c "for i in 1 2 3 4 5; do true 3<>/dev/infiniband/uverbs1; done 2>/dev/null; $CLIENT open /dev/infiniband/uverbs1 rdwr" >"$WORK/out" 2>"$WORK/err"
  [[ $(grep -c "denied open of \"/dev/infiniband/uverbs1\"" "$WORK/err") == 2 ]] || { cat "$WORK/err"; fail "expected one line per process (2 processes)"; }
  expect_in "$WORK/err" "6 denied (4 repeated denial lines not printed)"
}

case_run_command_arguments_are_the_commands() {
  # Everything after -- is the command's, whatever gdrproxy options precede it: a --grant right
  # before -- does not swallow the command's flags, and the command's own --grant/--mode/--policy
  # words change nothing.
  sandboxed -q --grant uverbs0 -- ls -la /dev/infiniband >"$WORK/out" 2>"$WORK/err" || { rc=$?; cat "$WORK/err"; fail "ls -la exit $rc"; }
  expect_in "$WORK/out" "uverbs0"
  sandboxed -q --grant uverbs0 -- sh -c 'echo "$@"' sh --grant uverbs1 --mode trace --policy /nonexistent >"$WORK/out2" 2>&1 || fail "exit $?"
  expect_in "$WORK/out2" "--grant uverbs1 --mode trace --policy /nonexistent"
  sandboxed -q --grant uverbs0 -- "$CLIENT" open /dev/infiniband/uverbs1 rdwr --grant uverbs1 --mode trace >"$WORK/out3" 2>&1
  expect_in "$WORK/out3" "ERR EACCES"
  # Grants as a comma list; the command may also start before -- (getopt's meaning of --).
  sandboxed -q --grant uverbs0,uverbs1 -- "$CLIENT" open /dev/infiniband/uverbs1 rdwr >"$WORK/out4" 2>&1
  expect_in "$WORK/out4" "OK fd="
  sandboxed -q --grant uverbs0 "$CLIENT" -- open /dev/infiniband/uverbs0 rdwr >"$WORK/out5" 2>&1
  expect_in "$WORK/out5" "OK fd="
  if timeout -k 5 20 "$GP" run -q --grant uverbs0 -- 2>"$WORK/err6"; then fail "no command accepted"; fi
  expect_in "$WORK/err6" "command"
}

case_policy_load_errors_name_file_and_field() {
  # An allowlist passed as a policy, and a wrong type: one line naming the file, the field and
  # what was expected; the command never runs.
  local rc=0
  timeout -k 5 20 "$GP" run --policy "$SRC/configs/allowlists/nvidia-580.json" -- touch "$WORK/ran" 2>"$WORK/err" || rc=$?
  ((rc == 125)) || fail "exit $rc"
  [[ ! -e $WORK/ran ]] || fail "the command ran"
  expect_in "$WORK/err" "policy $SRC/configs/allowlists/nvidia-580.json: "
  expect_in "$WORK/err" "NVIDIA allowlist"
  expect_not_in "$WORK/err" "type_error"
  echo '{"classes":{"uverbs":{"errno":0}}}' >"$WORK/p.json"
  timeout -k 5 20 "$GP" run --policy "$WORK/p.json" -- true 2>"$WORK/err2"
  [[ $? == 125 ]] || fail "errno 0 accepted"
  expect_in "$WORK/err2" "policy $WORK/p.json: classes.uverbs.errno: expected an errno from 1 to 4095"
}

case_callers_killed_mid_call() {
  # Many callers die at random points while their device calls are being served: gdrproxy must
  # neither crash nor hang, and must still report the command's own exit status.
  sandboxed -q --trace-json "$WORK/t.jsonl" -- sh -c "
    ( while :; do $CLIENT fork-tree /dev/infiniband/uverbs0 >/dev/null; done ) & loop=\$!
    for i in \$(seq 40); do sleep 0.0\$((i % 7 + 1)); pkill -KILL -P \$loop; done
    kill -KILL \$loop; wait; exit 3" >"$WORK/out" 2>"$WORK/err"
  local rc=$?
  [[ $rc == 3 ]] || { cat "$WORK/err"; fail "exit status $rc, expected 3"; }
  python3 -c "import json,sys; [json.loads(l) for l in open(sys.argv[1])]" "$WORK/t.jsonl" || fail "trace not valid JSON lines"
  # Some calls were served while callers were being killed.
  [[ $(jq_count "$WORK/t.jsonl" "r['call']=='INVOKE_WRITE(ALLOC_PD)'") -gt 10 ]] || fail "too few calls traced"
}

case_cuda_probe_runs_without_cuda() {
  # libcuda.so.1 is loaded at run time: without it the probe says so and exits 2.
  ldconfig -p | grep -q 'libcuda.so.1 ' && { echo "SKIP: CUDA present"; exit 77; }
  sandboxed -q -- "$TK" exercise cuda /dev/infiniband/uverbs0 >"$WORK/out" 2>&1
  [[ $? == 2 ]] || fail "expected exit 2"
  expect_in "$WORK/out" "cuda unavailable (libcuda.so.1"
}

SRC=$(cd "$(dirname "$0")/../.." && pwd)
"case_$CASE"
echo "PASS [$CASE]"
