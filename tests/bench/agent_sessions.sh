#!/usr/bin/env bash
# Handler latency of `gdrproxy agent` with 1, 8 and 32 concurrent containers, each issuing N
# well-formed uverbs ioctls (tests/bench/ioctl_bench client) through runtime_client (which plays
# runc), on stand-in device nodes. Prints, per session count: the callers' median ns per call,
# the median over sessions of each session's handler p50 and p99 (from the agent's end-of-session
# lines), and each figure's ratio to the single-session one. A benchmark, not a test.
# Usage: tests/bench/agent_sessions.sh [BUILD_DIR] [N]     (root)
set -euo pipefail
build=$(realpath "${1:-build}")
n=${2:-5000}
if [[ -z ${GDRPROXY_BENCH_INNER:-} ]]; then
  GDRPROXY_BENCH_INNER=1 exec "$build/gdrproxy-testkit" standin "$0" "$@"
fi
work=$(mktemp -d /tmp/gdrproxy-bench.XXXXXX)
agent_pid=
trap '[[ -n $agent_pid ]] && kill $agent_pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
echo '{"version": 1, "containers": [{"match": {"id": "bench-*"}, "grants": ["uverbs0"]}]}' >"$work/agent.json"
"$build/gdrproxy" agent --socket "$work/a.sock" --ctl-socket "$work/a.ctl" --config "$work/agent.json" \
  >"$work/agent.log" 2>&1 &
agent_pid=$!
for i in $(seq 100); do [[ -S $work/a.sock ]] && break; sleep 0.05; done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf "%-9s %12s %10s %10s %10s %10s %10s\n" sessions "caller ns" ratio "p50 us" ratio "p99 us" ratio
for s in 1 8 32; do
  : >"$work/agent.log.mark"
  start=$(wc -l <"$work/agent.log")
  for ((c = 0; c < s; c++)); do
    "$build/tests/agent/runtime_client" "$work/a.sock" "bench-$s-$c" runc-init -- \
      "$build/tests/bench/ioctl_bench" client "$n" /dev/infiniband/uverbs0 >"$work/c$c.out" 2>&1 &
  done
  wait $(jobs -p | grep -v "^$agent_pid\$") 2>/dev/null || true
  for i in $(seq 100); do
    [[ $(tail -n +$((start + 1)) "$work/agent.log" | grep -c "bench-$s-.* ended:") == "$s" ]] && break
    sleep 0.1
  done
  caller=$(cat "$work"/c*.out | grep -E '^[0-9.]+$' | head -n "$s" | median)
  lines=$(tail -n +$((start + 1)) "$work/agent.log" | grep "bench-$s-.* ended:")
  p50=$(sed -n 's/.*p50 \([0-9.]*\) us.*/\1/p' <<<"$lines" | median)
  p99=$(sed -n 's/.*p99 \([0-9.]*\) us.*/\1/p' <<<"$lines" | median)
  [[ $s == 1 ]] && { c1=$caller; p501=$p50; p991=$p99; }
  awk -v s="$s" -v c="$caller" -v c1="$c1" -v a="$p50" -v a1="$p501" -v b="$p99" -v b1="$p991" \
    'BEGIN { printf "%-9s %12.0f %10.2f %10.1f %10.2f %10.1f %10.2f\n", s, c, c/c1, a, a/a1, b, b/b1 }'
  rm -f "$work"/c*.out
done
echo "($(nproc) CPUs, $n ioctls per session, $(date -u +%F))"
