#!/usr/bin/env bash
# A caller interrupted by a restarting signal every 20 microseconds (Go's SIGURG preemption,
# profiling timers) while its brokered opens are decided: each open must be handled exactly once
# (the filter is loaded with SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV). Without the flag every
# interruption withdraws the call being handled and the restarted call is handled again (seen:
# 3300 notifications and one double host open for 300 opens).
# Usage: signal_storm_test.sh GDRPROXY OPEN_STORM   (root; 77 = skipped on kernels < 5.19)
set -uo pipefail
GP=$(realpath "$1")
TK=$(dirname "$GP")/gdrproxy-testkit  # the tests' tool: stand-in devices, exercisers
S=$(realpath "$2")
[[ $EUID == 0 ]] || { echo "SKIP: needs root"; exit 77; }
IFS=. read -r major minor _ < <(uname -r)
((major > 5 || (major == 5 && minor >= 19))) || { echo "SKIP: kernel $(uname -r) < 5.19 has no WAIT_KILLABLE_RECV"; exit 77; }
# opens N: "<open notifications> <brokered>" of one run opening /dev/nvidiactl N times. The run
# with N=0 counts the opens that are not the program's (the loader's, where every open is
# trapped): the difference must be exactly N, and N brokered.
opens() {
  local out
  out=$(timeout -k 5 120 "$TK" standin "$GP" run --stats -- "$S" /dev/nvidiactl "$1" 2>&1)
  echo "$out" >&2
  grep -q "^opened $1 " <<<"$out" || { echo "FAIL: not every open succeeded" >&2; exit 1; }
  sed -n 's/.* ioctl, \([0-9]*\) open (\([0-9]*\) brokered).*/\1 \2/p' <<<"$out"
}
read -r base_n base_b < <(opens 0)
read -r n b < <(opens 300)
[[ -n $n && -n $base_n ]] || { echo "FAIL: no --stats line"; exit 1; }
((n - base_n == 300 && b - base_b == 300)) ||
  { echo "FAIL: 300 opens were handled as $((n - base_n)) notifications, $((b - base_b)) brokered"; exit 1; }
echo "PASS: 300 interrupted opens, 300 notifications"
