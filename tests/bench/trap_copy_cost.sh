#!/usr/bin/env bash
# What the trap-copy program (proxy/observe/trap_copy.bpf.c, on every context switch of the host)
# costs per trapped ioctl: the per-call bench's client runs under gdrproxy enforce with
# kernel.bpf_stats_enabled on, the program's runs and run time are read twice during the run,
# and the table gives ns per run, runs per call and ns per call. The kernel's timing of each run
# (two clock reads) is included, so the figures are upper bounds. A benchmark, not a test. Root.
#   tests/bench/trap_copy_cost.sh [BUILD_DIR] [SECONDS]
#   GDRPROXY=PATH   measures another gdrproxy binary (an A/B: run the script once for each)
#   ROUNDS=R        rounds (default 3), one line each
#   CPUS=LIST       runs the client and gdrproxy under taskset -c LIST
set -euo pipefail
build=$(realpath "${1:-build}")
secs=${2:-3}
rounds=${ROUNDS:-3}
gp=${GDRPROXY:-$build/gdrproxy}
bench=$build/tests/bench/ioctl_bench
# dev, prefix (stand-in nodes unless the host has a real one) and copies:
# shellcheck source=tests/bench/ioctl_setup.sh
. "$(dirname "$0")/ioctl_setup.sh"
if ((${#copies[@]} == 0)); then
  echo "trap_copy_cost: this kernel refuses the trap copies ($gp run --trap-copy on -- true fails)" >&2
  exit 1
fi
work=$(mktemp -d)
runner=
was=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
  [[ -n $runner ]] && kill "$runner" 2>/dev/null && wait "$runner" 2>/dev/null
  sysctl -q kernel.bpf_stats_enabled="$was"
  rm -rf "$work"
}
trap cleanup EXIT
sysctl -q kernel.bpf_stats_enabled=1
run() {  # calls: the client under gdrproxy enforce, its ns per call on stdout
  "${prefix[@]}" "$gp" run -q "${copies[@]}" --sync-wakeup on --mode enforce -- \
    "$bench" client "$1" "$dev"
}
# Enough calls to outlast the window by a second or two, from a short run's rate.
per_call=$(run 20000 | tail -1)
calls=$(awk -v ns="$per_call" -v s="$secs" 'BEGIN { printf "%d", (s + 2.5) * 1e9 / ns }')
printf "trap-copy program cost, %s s windows, %d calls per run\n" "$secs" "$calls"
printf "%-6s %10s %10s %10s %12s\n" round "ns/call" "ns/run" "runs/call" "prog ns/call"
for ((r = 1; r <= rounds; r++)); do
  run "$calls" >"$work/out" &
  runner=$!
  sleep 1
  read -r runs0 ns0 < <("$bench" prog-stats copy_at_switch)
  sleep "$secs"
  read -r runs1 ns1 < <("$bench" prog-stats copy_at_switch)
  if ! wait "$runner"; then
    runner=
    echo "trap_copy_cost: the bench's run failed" >&2
    exit 1
  fi
  runner=
  per_call=$(tail -1 "$work/out")
  if ((runs1 <= runs0)); then
    echo "trap_copy_cost: copy_at_switch did not run during the window (no program loaded?)" >&2
    exit 1
  fi
  awk -v r="$r" -v nc="$per_call" -v s="$secs" -v a="$runs0" -v b="$runs1" -v t0="$ns0" \
    -v t1="$ns1" 'BEGIN {
      calls = s * 1e9 / nc; runs = b - a; t = t1 - t0
      printf "%-6d %10.0f %10.1f %10.2f %12.0f\n", r, nc, t / runs, runs / calls, t / calls
    }'
done
