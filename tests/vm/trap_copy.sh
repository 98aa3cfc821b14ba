# shellcheck shell=bash
# shellcheck disable=SC2154 # build, work: set by lib.sh, which run-tests.sh sources first
# Trap copies with real verbs (sourced by tests/vm/run-tests.sh, with lib.sh's helpers):
#   trap-copies-real-verbs: tests/bench/verbs_ctrl_rate (context open, MR register and deregister,
#     QP create and destroy on rxe0, libibverbs' real ioctls) under `gdrproxy run --trap-copy on`
#     and `--trap-copy off`: both succeed, nearly every trapped ioctl of the first was judged from
#     the copy its caller made at its trap (--stats), none of the second, and their traces hold the
#     same decoded calls with the same decisions.
#
# The one idea: copies made by the kernel's BPF program from real libibverbs requests must judge
# and decode exactly as gdrproxy's own lookups do.
t0=$(now_ms)
problems=()
for tc in on off; do
  PROXY_ARGS="--stats --trap-copy $tc" run_as proxied "trapcopy-$tc" \
    "$build/tests/bench/verbs_ctrl_rate" -d rxe0 -t 0.3 || problems+=("verbs_ctrl_rate exit $? with --trap-copy $tc")
  # A record whose result the guest kernel did not let the observer see (it says so, and so does
  # the run's summary) has no errno to compare: left out, as the other checks note it.
  jq -r 'select((.note // "") | test("result not observed") | not)
      | [.call, .decision, (.errno // "")] | join(" ")' "$work/trapcopy-$tc.jsonl" 2>/dev/null |
    sort -u >"$work/trapcopy-$tc.calls"
  if jq -e -s 'any(.[]; (.note // "") | test("result not observed"))' "$work/trapcopy-$tc.jsonl" >/dev/null 2>&1 &&
    ! grep -q "traced calls have no result" "$work/trapcopy-$tc.out"; then
    problems+=("--trap-copy $tc: a record without its result, and no summary line saying so")
  fi
done
read -r used total < <(sed -nE 's/.*trap copies: ([0-9]+) of ([0-9]+) trapped.*/\1 \2/p' "$work/trapcopy-on.out")
if [[ -z ${total:-} ]] || ((total == 0 || used * 10 < total * 9)); then
  problems+=("with --trap-copy on, ${used:-no} of ${total:-?} trapped ioctls had a copy (want at least 90 %)")
fi
! grep -q 'trap copies:' "$work/trapcopy-off.out" || problems+=("--trap-copy off still used copies")
[[ -s $work/trapcopy-on.calls ]] || problems+=("no traced calls")
cmp -s "$work/trapcopy-on.calls" "$work/trapcopy-off.calls" ||
  problems+=("traced calls differ: $(diff "$work/trapcopy-on.calls" "$work/trapcopy-off.calls" | grep '^[<>]' | head -3 | tr '\n' ' ')")
if ((${#problems[@]} == 0)); then
  record trap-copies-real-verbs PASS $(($(now_ms) - t0)) "$used of $total ioctls judged from trap copies; $(wc -l <"$work/trapcopy-on.calls") distinct calls as without"
else
  for tc in on off; do show "$work/trapcopy-$tc.out" "trapcopy-$tc"; done
  record trap-copies-real-verbs FAIL $(($(now_ms) - t0)) "$(IFS='; '; echo "${problems[*]}")"
fi
