#!/usr/bin/env bash
# Where a trapped ioctl's time goes, machine-wide: runs the per-call bench's client under
# gdrproxy (enforce, then trace with a JSON trace) and records every CPU with perf for a few
# seconds of it, then prints each mode's shares by process and object, and the top symbols.
# First it counts, per call, what each setup costs the machine beside its time: CPU time (all
# threads), context switches and migrations, from perf stat of two runs of N and 2N calls (the
# difference, over N: start-up and exit cancel out), for the bare supervisor, the blocking one,
# enforce and trace. Complements tests/bench/ioctl_latency.sh, which times the same calls.
# CPUS=LIST runs everything under taskset -c LIST (and records those CPUs only); N=calls
# (default 20000). Run as root:
#   tests/bench/ioctl_profile.sh BUILD_DIR [SECONDS] [PERF]
# BUILD_DIR holds gdrproxy and tests/bench/ioctl_bench (a build tree or the GPU bundle); PERF is
# the perf command (default: perf on PATH, else BUILD_DIR/perf/perf, which scripts/gpu-bundle.sh
# --perf packs). Writes perf data under ${OUT:-/tmp/gdrproxy-profile}.
set -euo pipefail
build=$1
secs=${2:-3}
perf=${3:-}
if [[ -z $perf ]]; then
  if command -v perf >/dev/null; then
    perf=perf
  elif [[ -x $build/perf/perf ]]; then
    perf=$build/perf/perf
  else
    echo "ioctl_profile: no perf on PATH and none in $build/perf" >&2
    exit 2
  fi
fi
if [[ -d $build/perf/lib ]]; then
  perf_lib=$(realpath "$build/perf/lib")
  export LD_LIBRARY_PATH=$perf_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
gp=$(realpath "$build/gdrproxy")
bench=$(realpath "$build/tests/bench/ioctl_bench")
out=${OUT:-/tmp/gdrproxy-profile}
mkdir -p "$out"
# dev, prefix (stand-in nodes unless the host has a real one) and copies:
# shellcheck source=tests/bench/ioctl_setup.sh
. "$(dirname "$0")/ioctl_setup.sh"
n=${N:-20000}

# perf stat's counts of one run: "task-clock-ns context-switches cpu-migrations", then the
# client's ns per call.
count() {  # calls, supervisor command...
  local calls=$1
  shift
  local stat=$out/stat.csv ns
  ns=$("${prefix[@]}" "$perf" stat -x, -o "$stat" -e task-clock,context-switches,cpu-migrations \
    -- "$@" "$bench" client "$calls" "$dev" 2>/dev/null | tail -1)
  awk -F, '$3 ~ /^task-clock/ {t = $1 * 1e6}
           $3 ~ /^context-switches/ {c = $1} $3 ~ /^cpu-migrations/ {m = $1}
           END {printf "%.0f %d %d", t, c, m}' "$stat"
  echo " $ns"
}
echo "== per call, from runs of $n and $((2 * n)) calls, CPUs ${CPUS:-any}"
printf '%-18s %10s %12s %10s %12s\n' setup "ns/call" "CPU ns/call" "switches" migrations
for setup in raw raw-blocking enforce trace; do
  case $setup in
    raw | raw-blocking) sup=("$bench" "$setup" --) ;;
    enforce) sup=("$gp" run -q "${copies[@]}" --sync-wakeup on --mode enforce --) ;;
    trace) sup=("$gp" run -q "${copies[@]}" --sync-wakeup on --mode trace --trace-json /dev/null --) ;;
  esac
  read -r t1 c1 m1 _ < <(count "$n" "${sup[@]}") || true
  read -r t2 c2 m2 ns2 < <(count $((2 * n)) "${sup[@]}") || true
  if [[ -z ${ns2:-} || -z ${t1:-} ]]; then
    echo "ioctl_profile: $setup failed: ${sup[*]}" >&2
    continue
  fi
  awk -v s="$setup" -v n="$n" -v t1="$t1" -v t2="$t2" -v c1="$c1" -v c2="$c2" -v m1="$m1" \
    -v m2="$m2" -v ns="$ns2" 'BEGIN {
      printf "%-18s %10.0f %12.0f %10.2f %12.4f\n", s, ns, (t2 - t1) / n, (c2 - c1) / n, (m2 - m1) / n
    }'
done

where=(-a)
if [[ -n ${CPUS:-} ]]; then where=(-C "$CPUS"); fi
for mode in enforce trace; do
  args=(run -q "${copies[@]}" --sync-wakeup on --mode "$mode")
  [[ $mode == trace ]] && args+=(--trace-json /dev/null)
  # Enough calls to outlast the recording (a call takes microseconds); stopped after it.
  "${prefix[@]}" "$gp" "${args[@]}" -- "$bench" client 50000000 "$dev" >/dev/null 2>&1 &
  runner=$!
  sleep 1
  "$perf" record -q "${where[@]}" -o "$out/$mode.data" -- sleep "$secs" >/dev/null 2>&1 || true
  pkill -P "$runner" >/dev/null 2>&1 || true
  pkill -f "$bench client 50000000" >/dev/null 2>&1 || true
  wait "$runner" 2>/dev/null || true
  echo "== $mode: share of samples by process and object"
  "$perf" report -i "$out/$mode.data" --no-children --sort comm,dso --percent-limit 1 --stdio 2>/dev/null |
    grep -E '^ +[0-9.]+%' | head -12
  echo "== $mode: top symbols (process, object, symbol)"
  "$perf" report -i "$out/$mode.data" --no-children --sort comm,dso,sym --percent-limit 0.7 --stdio 2>/dev/null |
    grep -E '^ +[0-9.]+%' | grep -v swapper | head -30 | cut -c1-150
done
