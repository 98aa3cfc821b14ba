#!/usr/bin/env bash
# What `gdrproxy run --lsm on` saves per call, in one run: RM_FREE (an escape the default policy
# allows whatever its parameters) issued N times on the stand-in nvidiactl by a sandbox granted
# nvidiactl, nvidia-uvm and nvidia0 but not nvidia1. Without the judge a GPU not granted keeps
# every escape trapped (the filter cannot tell which GPU an fd is); with it the call runs in the
# kernel, judged by the BPF LSM program. Baselines from the same run: the call natively, and with
# every GPU granted (untrapped by the seccomp ALLOW alone, no judge). Needs the BPF LSM active
# (the soft-RoCE VM: tests/bench/lsm/vm-guest.sh); a benchmark, not a test.
# Usage: tests/bench/lsm/judge_latency.sh [BUILD_DIR] [N]
set -euo pipefail
build=$(realpath "${1:-build}")
n=${2:-20000}
gp=$build/gdrproxy
tk=$build/gdrproxy-testkit
bench=$build/tests/bench/ioctl_bench
rm_free=0xc0104629
some=nvidiactl,nvidia-uvm,nvidia0
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
measure() {  # command prefix... (under the stand-in nodes)
  for _ in 1 2 3 4 5; do
    "$tk" standin "$@" "$bench" nvclient "$n" /dev/nvidiactl $rm_free 2>/dev/null
  done | median
}
if ! why=$("$tk" standin "$gp" run -q --lsm on -- true 2>&1); then
  echo "judge_latency: the judge cannot run here: $why" >&2
  exit 77
fi
native=$(measure)
all=$(measure "$gp" run -q --)
trapped=$(measure "$gp" run -q --grant $some --)
judged=$(measure "$gp" run -q --lsm on --grant $some --)
awk -v n="$native" -v a="$all" -v t="$trapped" -v j="$judged" -v count="$n" 'BEGIN {
  printf "RM_FREE on nvidiactl, %d calls x 5 runs (median), ns per call\n", count
  printf "%-52s %10s %10s %14s\n", "setup", "ns/call", "added ns", "vs trapped"
  printf "%-52s %10.0f %10s %14s\n", "native (no gdrproxy)", n, "-", "-"
  printf "%-52s %10.0f %10.0f %14.3f\n", "every GPU granted: seccomp ALLOW, no judge", a, a-n, (a-n)/(t-n)
  printf "%-52s %10.0f %10.0f %14.3f\n", "nvidia1 not granted: trapped to gdrproxy", t, t-n, 1
  printf "%-52s %10.0f %10.0f %14.3f\n", "nvidia1 not granted, --lsm on: judged in the kernel", j, j-n, (j-n)/(t-n)
}'
