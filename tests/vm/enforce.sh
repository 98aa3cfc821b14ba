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
#   rdma_cm-writes-scoped: rdma_cm commands are write()s on /dev/infiniband/rdma_cm, which the
#     caller opens itself once granted (the kernel accepts those writes only from the opener's
#     credentials); a process holding an rdma_cm id (tests/vm/cm_write_scope) works under the
#     proxy, its CREATE_ID/BIND are traced (observed at syscall exit), and none of its write()s,
#     counted in the kernel, reach the supervisor.
#
# The one idea: the trap-scope proof does not trust the proxy's own trace; it counts in the kernel.

# ---- deny REG_MR ---------------------------------------------------------------------------------
deny_policy=$here/deny-reg-mr.json
# the errno of the REG_MR rule, by name (the trace shows names too), and its message
deny_errno=$(jq -r '[.. | objects | select(.write_cmd? == "REG_MR" or .op? == "REG_MR") | .errno][0] // empty' "$deny_policy" 2>/dev/null)
t0=$(now_ms)
problems=()
PROXY_POLICY=$deny_policy run_as proxied deny-reg-mr.pingpong ibv_rc_pingpong $V -n 10
rc=$?
((rc != 0 && rc != 124 && rc != 137)) || problems+=("ibv_rc_pingpong exit $rc, expected a clean failure")
grep -q "Couldn't register MR" "$work/deny-reg-mr.pingpong.out" || problems+=("no 'Couldn't register MR' message")
PROXY_POLICY=$deny_policy run_as proxied deny-reg-mr.rate "$build/tests/bench/verbs_ctrl_rate" -d rxe0 -t 0.2
rc=$?
want_msg=$(perl -MErrno -e '$! = &{"Errno::$ARGV[0]"}; print "$!"' "${deny_errno:-EINVAL}" 2>/dev/null)
((rc == 1)) || problems+=("verbs_ctrl_rate exit $rc, expected 1")
grep -q "ibv_reg_mr/ibv_dereg_mr: $want_msg" "$work/deny-reg-mr.rate.out" ||
  problems+=("verbs_ctrl_rate did not see errno ${deny_errno:-?} ($want_msg)")
for t in pingpong rate; do
  jq -e -s --arg e "${deny_errno:-?}" 'any(.[]; ((.call // "") | test("REG_MR"))
      and (.decision | tostring | test("deny"; "i")) and .errno == $e)' \
    "$work/deny-reg-mr.$t.jsonl" >/dev/null 2>&1 || problems+=("$t trace has no denied REG_MR with errno ${deny_errno:-?}")
done
if ((${#problems[@]} == 0)); then
  record deny-reg-mr PASS $(($(now_ms) - t0)) "$(grep -h "Couldn't register MR\|ibv_reg_mr/" "$work"/deny-reg-mr.*.out | tr '\n' ' ' | cut -c1-90)"
else
  for f in "$work"/deny-reg-mr.*.out; do show "$f" "$(basename "$f" .out)"; done
  jq -c 'select((.call // "") | test("REG_MR"))' "$work"/deny-reg-mr.*.jsonl 2>/dev/null | head -4 | sed 's/^/    [deny trace] /'
  record deny-reg-mr FAIL $(($(now_ms) - t0)) "$(IFS='; '; echo "${problems[*]}")"
fi

# ---- trap scope: doorbells and plain writes stay untrapped -----------------------------------------
tracing=/sys/kernel/tracing
# SECCOMP_IOCTL_NOTIF_RECV = _IOWR('!', 0, struct seccomp_notif /* 80 bytes */)
notif_recv=0xc0502100
# kcount COMM CMD...: runs CMD (a shell function or command) with two syscall tracepoints on and
# prints "WRITES NOTIFICATIONS": the write()s of processes named COMM and the
# SECCOMP_IOCTL_NOTIF_RECV ioctls of anyone (the supervisor's, one per trapped syscall). Prints
# "failed failed" when CMD fails (its status, or src/crc of a pair, must be 0).
kcount() {
  local comm=$1 src=0 crc=0 rc
  shift
  echo 0 >$tracing/tracing_on
  echo 4096 >$tracing/buffer_size_kb
  : >$tracing/trace
  echo "cmd == $notif_recv" >$tracing/events/syscalls/sys_enter_ioctl/filter
  echo "comm == \"$comm\"" >$tracing/events/syscalls/sys_enter_write/filter
  echo 1 >$tracing/events/syscalls/sys_enter_ioctl/enable
  echo 1 >$tracing/events/syscalls/sys_enter_write/enable
  echo 1 >$tracing/tracing_on
  "$@" >&2  # stdout is the result line
  rc=$?
  echo 0 >$tracing/tracing_on
  echo 0 >$tracing/events/syscalls/sys_enter_ioctl/enable
  echo 0 >$tracing/events/syscalls/sys_enter_write/enable
  if [[ $rc != 0 || $src != 0 || $crc != 0 ]]; then
    echo "failed failed"
  else
    echo "$(grep -c ' sys_write(' $tracing/trace) $(grep -c ' sys_ioctl(' $tracing/trace)"
  fi
}
numbers() { [[ "$*" =~ ^[0-9]+( [0-9]+)*$ ]]; }

if [[ -w $tracing/events/syscalls/sys_enter_ioctl/filter ]]; then
  # rxe's send doorbell is a write() on the uverbs fd, one per ibv_post_send: 450 more iterations
  # are about 900 more of them on the two sides. Trapped, they would add as many notifications.
  t0=$(now_ms)
  read -r w1 n1 < <(kcount ibv_rc_pingpong pair_as proxied traps-50 tcp:18515 \
    "ibv_rc_pingpong $V -n 50" "ibv_rc_pingpong $V -n 50 $lo")
  read -r w2 n2 < <(kcount ibv_rc_pingpong pair_as proxied traps-500 tcp:18515 \
    "ibv_rc_pingpong $V -n 500" "ibv_rc_pingpong $V -n 500 $lo")
  detail="writes $w1 -> $w2, notifications $n1 -> $n2 for 50 -> 500 iterations"
  if numbers "$w1 $w2 $n1 $n2" && ((w2 - w1 >= 800 && n1 > 0 && n2 - n1 <= 10)); then
    record doorbells-untrapped PASS $(($(now_ms) - t0)) "$detail"
  else
    record doorbells-untrapped FAIL $(($(now_ms) - t0)) "$detail"
  fi

  # A process holding an rdma_cm id: neither its rdma_cm commands (write() on its own rdma_cm
  # fd) nor its 2000 other write()s reach the supervisor; its rdma_cm commands are traced.
  t0=$(now_ms)
  scope=$build/tests/vm/cm_write_scope
  read -r w1 n1 < <(kcount cm_write_scope run_as proxied cm-scope-10 "$scope" -a "$cm_addr" -n 10)
  read -r w2 n2 < <(kcount cm_write_scope run_as proxied cm-scope-2000 "$scope" -a "$cm_addr" -n 2000)
  detail="writes $w1 -> $w2, notifications $n1 -> $n2 for 10 -> 2000 plain writes"
  problems=()
  numbers "$w1 $w2 $n1 $n2" && ((w2 - w1 >= 1990 && n1 > 0 && n2 - n1 <= 5)) || problems+=("$detail")
  grep -q 'bound' "$work/cm-scope-2000.out" 2>/dev/null || problems+=("cm_write_scope did not bind its id")
  while IFS= read -r p; do
    if [[ $p == note:* ]]; then
      detail+="; ${p#note: }"
    elif [[ -n $p ]]; then
      problems+=("trace: $p")
    fi
  done < <(trace_problems "$work/cm-scope-2000.jsonl" CREATE_ID BIND)
  if ((${#problems[@]} == 0)); then
    record rdma_cm-writes-scoped PASS $(($(now_ms) - t0)) "$detail"
  else
    show "$work/cm-scope-2000.out" cm-scope
    record rdma_cm-writes-scoped FAIL $(($(now_ms) - t0)) "$(IFS='; '; echo "${problems[*]}")"
  fi
else
  record doorbells-untrapped FAIL 0 "no syscall tracepoints in $tracing"
fi
