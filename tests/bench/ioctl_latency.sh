#!/usr/bin/env bash
# Added latency per trapped device ioctl: native vs a minimal raw supervisor vs gdrproxy
# (enforce, and trace with result observation), all in one run on this machine. Prints the table
# and the ratios; it is a benchmark, not a test (no pass/fail).
# The rows are measured round by round (each round runs every row once, then the next round), and
# each row's median over the rounds is printed: a host whose speed drifts within the run (a busy
# neighbour, a CPU changing state) moves every row alike instead of the rows measured then. The
# last two columns pair each round's row with that round's native and raw runs: the median of
# the per-round ratios, and their middle half (quartiles), so a ratio comes with its spread.
# The raw supervisor sets the synchronous wake-up flag, so gdrproxy is measured with it too
# (--sync-wakeup on); its default (auto: off on hosts with more than 4 CPUs) is a row of its own.
# gdrproxy's rows use trap copies where the kernel allows them, loaded before the command starts
# (--trap-copy on: the default, auto, loads them beside the command, and the first calls of a run
# would be measured without them); the same modes with --trap-copy off are rows of their own (a
# binary without the option, or a kernel that refuses the copies, prints "-" there).
# The agent row runs the client as a container's process of `gdrproxy agent` (agent_call.sh),
# where BUILD_DIR has runtime_client (tests/agent/, or the GPU bundle's top).
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
# A container's process of the agent (tests/bench/agent_call.sh), where runtime_client is built.
runtime_client=
for c in "$build/tests/agent/runtime_client" "$build/runtime_client"; do
  [[ -x $c ]] && runtime_client=$c && break
done
if [[ -n $runtime_client ]]; then
  row agent "$(dirname "$0")/agent_call.sh" "$gp" "$runtime_client" "${copies[@]}" \
    --sync-wakeup on --
fi
if ((${#copies[@]})); then
  row enforce_nc "$gp" run -q --sync-wakeup on --trap-copy off --mode enforce --
  row trace_nc "$gp" run -q --sync-wakeup on --trap-copy off --mode trace --trace-json /dev/null --
fi
if [[ -n ${BASELINE:-} ]]; then
  row base_enforce "$BASELINE" run -q "${copies[@]}" --sync-wakeup on --mode enforce --
  row base_trace "$BASELINE" run -q "${copies[@]}" --sync-wakeup on --mode trace \
    --trace-json /dev/null --
fi

declare -A by_round  # name,round -> ns per call
for ((r = 1; r <= rounds; r++)); do
  for name in "${rows[@]}"; do
    v=$(eval "${prefix[*]@Q} ${cmd[$name]} ${bench@Q} client $n ${dev@Q}" 2>/dev/null | tail -1) || true
    [[ $v =~ ^[0-9.]+$ ]] && results[$name]+="$v " && by_round[$name,$r]=$v
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
    if [[ $name == *_nc || ($name == agent && -z $runtime_client) ]]; then
      med[$name]=-  # the binary has no --trap-copy, or the kernel refuses the copies
      continue
    fi
    echo "ioctl_latency: every run of '$name' failed: ${prefix[*]} ${cmd[$name]}$bench client $n $dev" >&2
    exit 1
  fi
done

# Each round's ratio of a row's added time to the raw supervisor's, native and raw from the same
# round (a round where one of the three failed gives none).
paired() {
  local name=$1 r out=
  for ((r = 1; r <= rounds; r++)); do
    local v=${by_round[$name,$r]:-} nat=${by_round[native,$r]:-} raw=${by_round[raw,$r]:-}
    [[ -n $v && -n $nat && -n $raw ]] || continue
    out+=$(awk -v v="$v" -v n="$nat" -v r="$raw" 'BEGIN { if (r > n) printf "%.4f ", (v - n) / (r - n) }')
  done
  echo "$out"
}
{
  echo "native (no filter)|native"
  echo "raw supervisor (CONTINUE only)|raw"
  echo "raw, blocking RECV thread, no poll|blocking"
  echo "raw, epoll then poll (event loop)|epoll"
  echo "gdrproxy enforce (decode+policy)|enforce"
  echo "gdrproxy trace (+BPF result)|trace"
  echo "gdrproxy enforce, default wake-up|auto"
  echo "agent container process, enforce|agent"
  echo "gdrproxy enforce, --trap-copy off|enforce_nc"
  echo "gdrproxy trace, --trap-copy off|trace_nc"
  if [[ -n ${BASELINE:-} ]]; then
    echo "baseline enforce|base_enforce"
    echo "baseline trace|base_trace"
  fi
} | while IFS='|' read -r label name; do
  echo "$label|$name|${med[$name]:--}|$(paired "$name")"
done | awk -F'|' -v n="${med[native]}" -v r="${med[raw]}" -v count="$n" -v rounds="$rounds" \
  -v cpus="${CPUS:-any}" '
# The value at fraction q of the sorted list a[1..k].
function at(a, k, q) { return a[int(q * (k - 1) + 1.5)] }
BEGIN {
  printf "ioctl latency, %d calls x %d rounds (median), CPUs %s, ns per call\n", count, rounds, cpus
  printf "%-34s %10s %10s %8s %8s %13s\n", "setup", "ns/call", "added ns", "vs raw", "paired", "paired IQR"
}
{
  if ($3 == "-" || $3 == "") { printf "%-34s %10s %10s %8s %8s %13s\n", $1, "-", "-", "-", "-", "-"; next }
  if ($2 == "native") { printf "%-34s %10.0f %10s %8s %8s %13s\n", $1, $3, "-", "-", "-", "-"; next }
  k = split($4, v, " ")
  # insertion sort: a few dozen rounds at most
  for (i = 2; i <= k; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
  pm = k ? sprintf("%.2f", at(v, k, 0.5)) : "-"
  iqr = k ? sprintf("%.2f-%.2f", at(v, k, 0.25), at(v, k, 0.75)) : "-"
  printf "%-34s %10.0f %10.0f %8.2f %8s %13s\n", $1, $3, $3 - n, ($3 - n) / (r - n), pm, iqr
}'
