#!/usr/bin/env bash
# How many device calls a container's workloads trap, with and without the requests its profile
# lets run untrapped (`oci prepare --kernel-allow`), next to the same workloads under `gdrproxy
# run`. The idea not to miss: a container's filter is its runtime's, compiled from the profile,
# so this is the runtime (runc, with its own libseccomp) honouring the exact ALLOW rules; the
# counts are the agent's (trapped ioctls + opens), the workloads must pass and nothing be denied.
# Usage (GPU machine, repo root, root): tests/gpu/container_untrapped.sh [BUNDLE_DIR [OUT_DIR]]
# Prints one line per workload and mode, and last: "container untrapped: PASS|FAIL ...".
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
bundle=${1:-.gpu-bundle}
out=${2:-$(mktemp -d)}
mkdir -p "$out"
gp=$(realpath "$bundle/gdrproxy")
LD_LIBRARY_PATH=$(realpath "$bundle/lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
export NCCL_NVLS_ENABLE=0
[[ -f $bundle/deny-default-base.json ]] || { echo "container untrapped: FAIL: no deny-default-base.json in $bundle"; exit 1; }
fail=0 summary=
for w in matmul allreduce; do
  # Under `gdrproxy run` (its own filter, the in-kernel ALLOW on by default).
  "$gp" run --mode enforce --stats -- python3 tests/gpu/workloads.py $w >"$out/run-$w.out" 2>"$out/run-$w.err"
  run_n=$(grep 'gdrproxy: served' "$out/run-$w.err" | tail -1 | sed -n 's/.*served \([0-9]*\) notifications.*/\1/p')
  declare -A n=()
  for mode in on off; do
    d=$(mktemp -d)
    CTR_SCRIPT="python3 tests/gpu/workloads.py $w > /out/$w.out 2>&1" CTR_OUT=$d \
      CTR_KERNEL_ALLOW=$([[ $mode == on ]] && echo 1) \
      tests/gpu/runc_container.sh "$bundle" >"$out/ctr-$w-$mode.log" 2>&1
    rc=$?
    ended=$(grep "container gpu-ctr-1 ended" "$out/ctr-$w-$mode.log" | tail -1)
    io=$(sed -n 's/.* ended: \([0-9]*\) ioctl, \([0-9]*\) open, \([0-9]*\) denied.*/\1 \2 \3/p' <<<"$ended")
    read -r ioctls opens denied <<<"${io:-x x x}"
    n[$mode]=$((${ioctls:-0} + ${opens:-0}))
    if [[ $rc != 0 || $denied != 0 ]] || ! grep -q "^PASS $w" "$d/$w.out" 2>/dev/null; then
      echo "$w container (kernel-allow $mode): FAIL (rc $rc, denied $denied)"; tail -5 "$out/ctr-$w-$mode.log"
      tail -3 "$d/$w.out" 2>/dev/null
      fail=1
    fi
    grep -h "untrapped\|every device ioctl" "$out/ctr-$w-$mode.log" | head -2
    rm -rf "$d"
  done
  echo "$w: run ${run_n:-?} notifications; container ${n[on]} with its untrapped requests, ${n[off]} without"
  # The untrapped requests must take calls off the container's filter, as they do off run's.
  ((n[on] < n[off])) || { echo "$w: the container trapped as many calls with its untrapped requests"; fail=1; }
  summary+="$w run ${run_n:-?}/ctr ${n[on]} (all trapped ${n[off]}); "
done
if ((fail)); then echo "container untrapped: FAIL: $summary"; exit 1; fi
echo "container untrapped: PASS: $summary"
