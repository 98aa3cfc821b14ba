#!/usr/bin/env bash
# A caller interrupted by a restarting signal every 20 microseconds (Go's SIGURG preemption,
# profiling timers) while its brokered opens are decided: each open must be handled exactly once
# (the filter is loaded with SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV). Without the flag every
# interruption withdraws the call being handled and the restarted call is handled again (seen:
# 3300 notifications and one double host open for 300 opens).
# Usage: signal_storm_test.sh GDRPROXY OPEN_STORM   (root; 77 = skipped on kernels < 5.19)
set -uo pipefail
GP=$(realpath "$1")
S=$(realpath "$2")
[[ $EUID == 0 ]] || { echo "SKIP: needs root"; exit 77; }
IFS=. read -r major minor _ < <(uname -r)
((major > 5 || (major == 5 && minor >= 19))) || { echo "SKIP: kernel $(uname -r) < 5.19 has no WAIT_KILLABLE_RECV"; exit 77; }
out=$(timeout 120 "$GP" standin "$GP" run --stats -- "$S" /dev/nvidiactl 300 2>&1)
echo "$out"
grep -q "^opened 300 " <<<"$out" || { echo "FAIL: not every open succeeded"; exit 1; }
grep -q "served 300 notifications: 0 ioctl, 300 open (300 brokered)" <<<"$out" ||
  { echo "FAIL: the opens were handled more than once each"; exit 1; }
echo "PASS: 300 interrupted opens, 300 notifications"
