#!/usr/bin/env bash
# Where a trapped ioctl's time goes, machine-wide: runs the per-call bench's client under
# gdrproxy (enforce, then trace with a JSON trace) and records every CPU with perf for a few
# seconds of it, then prints each mode's shares by process and object, and the top symbols.
# Complements tests/bench/ioctl_latency.sh, which times the same calls. Run as root:
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

for mode in enforce trace; do
  args=(run -q "${copies[@]}" --sync-wakeup on --mode "$mode")
  [[ $mode == trace ]] && args+=(--trace-json /dev/null)
  # Enough calls to outlast the recording (a call takes microseconds); stopped after it.
  "${prefix[@]}" "$gp" "${args[@]}" -- "$bench" client 50000000 "$dev" >/dev/null 2>&1 &
  runner=$!
  sleep 1
  "$perf" record -q -a -o "$out/$mode.data" -- sleep "$secs" >/dev/null 2>&1 || true
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
