#!/usr/bin/env bash
# Added latency per trapped device ioctl: native vs a minimal raw supervisor vs gdrproxy
# (enforce, and trace with result observation), all in one run on this machine. Prints the table
# and the ratios; it is a benchmark, not a test (no pass/fail).
# The raw supervisor sets the synchronous wake-up flag, so gdrproxy is measured with it too
# (--sync-wakeup on); its default (auto: off on hosts with more than 2 CPUs) is a row of its own.
# gdrproxy's rows use trap copies where the kernel allows them, loaded before the command starts
# (--trap-copy on: the default, auto, loads them beside the command, and the first calls of a run
# would be measured without them); the same modes with --trap-copy off are rows of their own (a
# binary without the option, or a kernel that refuses the copies, prints "-" there).
# Usage: tests/bench/ioctl_latency.sh [BUILD_DIR] [N]   (GDRPROXY=PATH measures another binary)
set -euo pipefail
build=$(realpath "${1:-build}")
n=${2:-20000}
gp=${GDRPROXY:-$build/gdrproxy}
bench=$build/tests/bench/ioctl_bench
# dev, prefix (stand-in nodes unless the host has a real one) and copies:
# shellcheck source=tests/bench/ioctl_setup.sh
. "$(dirname "$0")/ioctl_setup.sh"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
measure() {  # label (names the row at the call), command prefix...
  local label=$1 v
  shift
  v=$(for _ in 1 2 3 4 5; do
    "${prefix[@]}" "$@" "$bench" client "$n" "$dev" 2>/dev/null
    # A traced run's exit programs stay attached for a moment after it ends (the kernel detaches
    # them when its exit child's fds close, some 200 ms here): the next run must not pay them.
    if [[ " $* " == *" --mode trace "* ]]; then sleep 0.5; fi
  done | median)
  # No number from any run: a table of zeros would pass for a measurement.
  [[ $v =~ ^[0-9.]+$ ]] || {
    echo "ioctl_latency: every run of '$label' failed: ${prefix[*]} $* $bench client $n $dev" >&2
    return 1
  }
  echo "$v"
}
native=$(measure native)
raw=$(measure raw "$bench" raw --)
blocking=$(measure raw-blocking "$bench" raw-blocking --)
epoll=$(measure raw-epoll "$bench" raw-epoll --)
enforce=$(measure enforce "$gp" run -q "${copies[@]}" --sync-wakeup on --mode enforce --)
trace=$(measure trace "$gp" run -q "${copies[@]}" --sync-wakeup on --mode trace \
  --trace-json /dev/null --)
auto=$(measure auto "$gp" run -q "${copies[@]}" --mode enforce --)
enforce_nc=- trace_nc=-
if ((${#copies[@]})); then
  enforce_nc=$(measure enforce-nc "$gp" run -q --sync-wakeup on --trap-copy off --mode enforce --)
  trace_nc=$(measure trace-nc "$gp" run -q --sync-wakeup on --trap-copy off --mode trace \
    --trace-json /dev/null --)
fi
awk -v n="$native" -v r="$raw" -v b="$blocking" -v ep="$epoll" -v e="$enforce" -v t="$trace" -v a="$auto" \
  -v enc="$enforce_nc" -v tnc="$trace_nc" -v count="$n" '
function row(label, v) {
  if (v == "-") printf "%-34s %10s %12s %12s\n", label, "-", "-", "-"
  else printf "%-34s %10.0f %12.0f %12.2f\n", label, v, v-n, (v-n)/(r-n)
}
BEGIN {
  printf "ioctl latency, %d calls x 5 runs (median), ns per call\n", count
  printf "%-34s %10s %12s %12s\n", "setup", "ns/call", "added ns", "vs raw"
  printf "%-34s %10.0f %12s %12s\n", "native (no filter)", n, "-", "-"
  printf "%-34s %10.0f %12.0f %12s\n", "raw supervisor (CONTINUE only)", r, r-n, "1.00"
  printf "%-34s %10.0f %12.0f %12.2f\n", "raw, blocking RECV thread, no poll", b, b-n, (b-n)/(r-n)
  printf "%-34s %10.0f %12.0f %12.2f\n", "raw, epoll then poll (event loop)", ep, ep-n, (ep-n)/(r-n)
  printf "%-34s %10.0f %12.0f %12.2f\n", "gdrproxy enforce (decode+policy)", e, e-n, (e-n)/(r-n)
  printf "%-34s %10.0f %12.0f %12.2f\n", "gdrproxy trace (+BPF result)", t, t-n, (t-n)/(r-n)
  printf "%-34s %10.0f %12.0f %12.2f\n", "gdrproxy enforce, default wake-up", a, a-n, (a-n)/(r-n)
  row("gdrproxy enforce, --trap-copy off", enc)
  row("gdrproxy trace, --trap-copy off", tnc)
}'
