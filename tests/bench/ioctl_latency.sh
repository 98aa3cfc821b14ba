#!/usr/bin/env bash
# Added latency per trapped device ioctl: native vs a minimal raw supervisor vs gdrproxy
# (enforce, and trace with result observation), all in one run on this machine. Prints the table
# and the ratios; it is a benchmark, not a test (no pass/fail).
# The rows are measured round by round (each round runs every row once, then the next round), and
# each row's median over the rounds is printed: a host whose speed drifts within the run (a busy
# neighbour, a CPU changing state) moves every row alike instead of the rows measured then.
# The raw supervisor sets the synchronous wake-up flag, so gdrproxy is measured with it too
# (--sync-wakeup on); its default (auto: off on hosts with more than 4 CPUs) is a row of its own.
# gdrproxy's rows use trap copies where the kernel allows them, loaded before the command starts
# (--trap-copy on: the default, auto, loads them beside the command, and the first calls of a run
# would be measured without them); the same modes with --trap-copy off are rows of their own (a
# binary without the option, or a kernel that refuses the copies, prints "-" there).
# Usage: tests/bench/ioctl_latency.sh [BUILD_DIR] [N]
#   GDRPROXY=PATH   measures another gdrproxy binary
#   BASELINE=PATH   adds enforce and trace rows of that binary (an older build), for an A/B in
#                   the same rounds
#   ROUNDS=R        rounds (default 5)
#   CPUS=LIST       runs everything on those CPUs (taskset -c LIST): on a many-CPU host where the
#                   scheduler's placement of the caller and the supervisor swings the raw row by 2x
set -euo pipefail
build=$(realpath "${1:-build}")
n=${2:-20000}
gp=${GDRPROXY:-$build/gdrproxy}
bench=$build/tests/bench/ioctl_bench
rounds=${ROUNDS:-5}
# dev, prefix (stand-in nodes unless the host has a real one) and copies:
# shellcheck source=tests/bench/ioctl_setup.sh
. "$(dirname "$0")/ioctl_setup.sh"
if [[ -n ${CPUS:-} ]]; then prefix=(taskset -c "$CPUS" "${prefix[@]}"); fi

declare -A cmd results
rows=()
row() {  # name, command prefix... (the client and its arguments follow it)
  local name=$1
  shift
  rows+=("$name")
  cmd[$name]=
  if (($#)); then cmd[$name]=$(printf '%q ' "$@"); fi
}
row native
row raw "$bench" raw --
row blocking "$bench" raw-blocking --
row epoll "$bench" raw-epoll --
row enforce "$gp" run -q "${copies[@]}" --sync-wakeup on --mode enforce --
row trace "$gp" run -q "${copies[@]}" --sync-wakeup on --mode trace --trace-json /dev/null --
row auto "$gp" run -q "${copies[@]}" --mode enforce --
if ((${#copies[@]})); then
  row enforce_nc "$gp" run -q --sync-wakeup on --trap-copy off --mode enforce --
  row trace_nc "$gp" run -q --sync-wakeup on --trap-copy off --mode trace --trace-json /dev/null --
fi
if [[ -n ${BASELINE:-} ]]; then
  row base_enforce "$BASELINE" run -q "${copies[@]}" --sync-wakeup on --mode enforce --
  row base_trace "$BASELINE" run -q "${copies[@]}" --sync-wakeup on --mode trace \
    --trace-json /dev/null --
fi

for ((r = 1; r <= rounds; r++)); do
  for name in "${rows[@]}"; do
    v=$(eval "${prefix[*]@Q} ${cmd[$name]} ${bench@Q} client $n ${dev@Q}" 2>/dev/null | tail -1) || true
    [[ $v =~ ^[0-9.]+$ ]] && results[$name]+="$v "
    # A traced run's exit programs stay attached for a moment after it ends (the kernel detaches
    # them when its exit child's fds close, some 200 ms here): the next run must not pay them.
    if [[ ${cmd[$name]} == *" trace "* ]]; then sleep 0.5; fi
  done
done

median() { tr ' ' '\n' | awk NF | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A med
for name in "${rows[@]}"; do
  med[$name]=$(median <<<"${results[$name]:-}")
  # No number from any round: a table of zeros would pass for a measurement.
  if [[ -z ${med[$name]} ]]; then
    if [[ $name == *_nc ]]; then
      med[$name]=-  # the binary has no --trap-copy, or the kernel refuses the copies
      continue
    fi
    echo "ioctl_latency: every run of '$name' failed: ${prefix[*]} ${cmd[$name]}$bench client $n $dev" >&2
    exit 1
  fi
done

awk -v n="${med[native]}" -v r="${med[raw]}" -v count="$n" -v rounds="$rounds" \
  -v cpus="${CPUS:-any}" '
BEGIN {
  printf "ioctl latency, %d calls x %d rounds (median), CPUs %s, ns per call\n", count, rounds, cpus
  printf "%-34s %10s %12s %12s\n", "setup", "ns/call", "added ns", "vs raw"
  printf "%-34s %10.0f %12s %12s\n", "native (no filter)", n, "-", "-"
  printf "%-34s %10.0f %12.0f %12s\n", "raw supervisor (CONTINUE only)", r, r-n, "1.00"
}' </dev/null
{
  echo "raw, blocking RECV thread, no poll|${med[blocking]}"
  echo "raw, epoll then poll (event loop)|${med[epoll]}"
  echo "gdrproxy enforce (decode+policy)|${med[enforce]}"
  echo "gdrproxy trace (+BPF result)|${med[trace]}"
  echo "gdrproxy enforce, default wake-up|${med[auto]}"
  echo "gdrproxy enforce, --trap-copy off|${med[enforce_nc]:--}"
  echo "gdrproxy trace, --trap-copy off|${med[trace_nc]:--}"
  if [[ -n ${BASELINE:-} ]]; then
    echo "baseline enforce|${med[base_enforce]}"
    echo "baseline trace|${med[base_trace]}"
  fi
} | awk -F'|' -v n="${med[native]}" -v r="${med[raw]}" '{
  if ($2 == "-" || $2 == "") printf "%-34s %10s %12s %12s\n", $1, "-", "-", "-"
  else printf "%-34s %10.0f %12.0f %12.2f\n", $1, $2, $2-n, ($2-n)/(r-n)
}'
