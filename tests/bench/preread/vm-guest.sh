#!/usr/bin/env bash
# Guest side of the pre-read evaluation (tests/bench/preread/run-in-vm.sh): alternating rounds of
# native calls, the bare supervisor (raw), the supervisor's own lookups (look: what gdrproxy does
# per call) and one map lookup of the copy made at the filter's entry (pre); each round prints the
# added latency of look and pre against raw's. The stand-in uverbs node is `gdrproxy-testkit standin`'s.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1
build=${GDRVM_BUILD:-build}
n=${PREREAD_CALLS:-3000}
rounds=${PREREAD_ROUNDS:-6}
tk=$build/gdrproxy-testkit bench=$build/tests/bench/ioctl_bench
obj=$build/tests/bench/preread.bpf.o
client=("$bench" client "$n" /dev/infiniband/uverbs0)
echo "kernel $(uname -r)"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
three() { for _ in 1 2 3; do "$tk" standin "$@" 2>/dev/null; done | median; }
# The copy must be made for every call, or the mode measures nothing.
check=$("$tk" standin "$bench" raw-pre "$obj" -- "${client[@]}" 2>&1 >/dev/null | tail -1)
echo "check: $check"
[[ $check == *" 0 without the data" ]] || { echo "the pre-read program does not serve every call here"; exit 1; }
for ((r = 1; r <= rounds; r++)); do
  native=$(three "${client[@]}")
  raw=$(three "$bench" raw -- "${client[@]}")
  look=$(three "$bench" raw-look -- "${client[@]}")
  copy=$(three "$bench" raw-pre "$obj" -- "${client[@]}")
  awk -v n="$native" -v r="$raw" -v l="$look" -v p="$copy" 'BEGIN {
    printf "round: native %.0f ns, raw %.0f, look %.0f, pre %.0f; added vs raw: look %.2f, pre %.2f\n",
      n, r, l, p, (l - n) / (r - n), (p - n) / (r - n) }'
done
