# shellcheck shell=bash
# Enforcement and trap-scope checks of the Soft-RoCE stage (sourced by tests/vm/run-tests.sh, with
# lib.sh's helpers and $V, $lo set).
#   deny-reg-mr: a policy that denies REG_MR (tests/vm/deny-reg-mr.json) makes ibv_rc_pingpong
#     fail cleanly (quick non-zero exit, its own error message), our verbs program sees the
#     configured errno, and the trace names the denied call.
#   doorbells-untrapped: rxe rings its send doorbell with write() on the uverbs fd, once per post.
#     The kernel's own syscall tracepoints count the ibv_rc_pingpong write()s and the
#     supervisor's SECCOMP_IOCTL_NOTIF_RECV calls for a 50- and a 500-iteration proxied run: the
#     writes grow with the iterations, the notifications must not.
#
# The one idea: the trap-scope proof does not trust the proxy's own trace; it counts in the kernel.

# ---- deny REG_MR ---------------------------------------------------------------------------------
deny_policy=$here/deny-reg-mr.json
deny_errno=$(jq -r '.. | objects | .errno? // empty' "$deny_policy" 2>/dev/null | head -1)
t0=$(now_ms)
problems=()
PROXY_POLICY=$deny_policy run_as proxied deny-reg-mr.pingpong ibv_rc_pingpong $V -n 10
rc=$?
((rc != 0 && rc != 124 && rc != 137)) || problems+=("ibv_rc_pingpong exit $rc, expected a clean failure")
grep -q "Couldn't register MR" "$work/deny-reg-mr.pingpong.out" || problems+=("no 'Couldn't register MR' message")
PROXY_POLICY=$deny_policy run_as proxied deny-reg-mr.rate "$build/tests/bench/verbs_ctrl_rate" -d rxe0 -t 0.2
rc=$?
want_msg=$(perl -e '$! = shift; print "$!"' "${deny_errno:-0}" 2>/dev/null)
((rc == 1)) || problems+=("verbs_ctrl_rate exit $rc, expected 1")
grep -q "ibv_reg_mr/ibv_dereg_mr: $want_msg" "$work/deny-reg-mr.rate.out" ||
  problems+=("verbs_ctrl_rate did not see errno ${deny_errno:-?} ($want_msg)")
for t in pingpong rate; do
  jq -e -s --argjson e "${deny_errno:-0}" 'any(.[]; ((.call // "") | test("REG_MR"))
      and (.decision | tostring | test("deny"; "i")) and (.errno == $e or .result == -$e))' \
    "$work/deny-reg-mr.$t.jsonl" >/dev/null 2>&1 || problems+=("$t trace has no denied REG_MR with errno ${deny_errno:-?}")
done
if ((${#problems[@]} == 0)); then
  record deny-reg-mr PASS $(($(now_ms) - t0)) "$(grep -h "Couldn't register MR\|ibv_reg_mr/" "$work"/deny-reg-mr.*.out | tr '\n' ' ' | cut -c1-90)"
else
  for f in "$work"/deny-reg-mr.*.out; do show "$f" "$(basename "$f" .out)"; done
  jq -c 'select((.call // "") | test("REG_MR"))' "$work"/deny-reg-mr.*.jsonl 2>/dev/null | head -4 | sed 's/^/    [deny trace] /'
  record deny-reg-mr FAIL $(($(now_ms) - t0)) "$(IFS='; '; echo "${problems[*]}")"
fi

# ---- doorbells stay untrapped --------------------------------------------------------------------
tracing=/sys/kernel/tracing
# SECCOMP_IOCTL_NOTIF_RECV = _IOWR('!', 0, struct seccomp_notif /* 80 bytes */)
notif_recv=0xc0502100
# count_traps ITERATIONS: runs a proxied ibv_rc_pingpong pair; prints "WRITES NOTIFICATIONS".
count_traps() {
  local src crc
  echo 0 >$tracing/tracing_on
  echo 4096 >$tracing/buffer_size_kb
  : >$tracing/trace
  echo "cmd == $notif_recv" >$tracing/events/syscalls/sys_enter_ioctl/filter
  echo 'comm == "ibv_rc_pingpong"' >$tracing/events/syscalls/sys_enter_write/filter
  echo 1 >$tracing/events/syscalls/sys_enter_ioctl/enable
  echo 1 >$tracing/events/syscalls/sys_enter_write/enable
  echo 1 >$tracing/tracing_on
  PROXY_TRACE=0 pair_as proxied "traps-$1" tcp:18515 "ibv_rc_pingpong $V -n $1" "ibv_rc_pingpong $V -n $1 $lo"
  echo 0 >$tracing/tracing_on
  echo 0 >$tracing/events/syscalls/sys_enter_ioctl/enable
  echo 0 >$tracing/events/syscalls/sys_enter_write/enable
  if [[ $src != 0 || $crc != 0 ]]; then
    echo "failed failed"
    return
  fi
  echo "$(grep -c ' sys_write(' $tracing/trace) $(grep -c ' sys_ioctl(' $tracing/trace)"
}
t0=$(now_ms)
if [[ -w $tracing/events/syscalls/sys_enter_ioctl/filter ]]; then
  read -r w50 n50 < <(count_traps 50)
  read -r w500 n500 < <(count_traps 500)
  detail="writes $w50 -> $w500, notifications $n50 -> $n500 for 50 -> 500 iterations"
  # 450 more iterations post about 900 more sends on the two sides; if those doorbells were
  # trapped, the notifications would grow by as much. A few are allowed for timing differences.
  if [[ $w50 =~ ^[0-9]+$ && $w500 =~ ^[0-9]+$ && $n50 =~ ^[0-9]+$ && $n500 =~ ^[0-9]+$ ]] &&
    ((w500 - w50 >= 800 && n50 > 0 && n500 - n50 <= 10)); then
    record doorbells-untrapped PASS $(($(now_ms) - t0)) "$detail"
  else
    record doorbells-untrapped FAIL $(($(now_ms) - t0)) "$detail"
  fi
else
  record doorbells-untrapped FAIL 0 "no syscall tracepoints in $tracing"
fi
