#!/usr/bin/env bash
# Guest side of the BPF LSM benchmarks (tests/bench/lsm/run-in-vm.sh boots the VM with the BPF LSM
# enabled on the kernel command line): the bare in-kernel decision's cost, what `gdrproxy run
# --lsm on` saves per call (judge_latency.sh), then the seccomp paths' (native, bare supervisor,
# gdrproxy enforce) in the same guest, so they compare.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1
build=${GDRVM_BUILD:-build}
n=${LSM_BENCH_CALLS:-20000}
mountpoint -q /sys/kernel/security || mount -t securityfs securityfs /sys/kernel/security
[[ -c /dev/loop-control ]] || modprobe loop  # the stand-in nvidia-uvm borrows it
echo "kernel $(uname -r), LSMs: $(cat /sys/kernel/security/lsm)"
"$build/tests/bench/lsm_ioctl_bench" "$n"
rc=$?
tests/bench/lsm/judge_latency.sh "$build" $((n / 10)) || rc=1
tests/bench/ioctl_latency.sh "$build" $((n / 10))
exit $rc
