#!/usr/bin/env bash
# Guest side of the BPF LSM evaluation (tests/bench/lsm/run-in-vm.sh boots the VM with the BPF LSM
# enabled on the kernel command line): the in-kernel decision's cost, then the seccomp paths'
# (native, bare supervisor, gdrproxy enforce) in the same guest, so the two compare.
set -uo pipefail
cd "$(dirname "$0")/../../.."
build=${GDRVM_BUILD:-build}
n=${LSM_BENCH_CALLS:-20000}
mountpoint -q /sys/kernel/security || mount -t securityfs securityfs /sys/kernel/security
echo "kernel $(uname -r), LSMs: $(cat /sys/kernel/security/lsm)"
"$build/tests/bench/lsm_ioctl_bench" "$build/tests/bench/ioctl_lsm.bpf.o" "$n"
rc=$?
tests/bench/ioctl_latency.sh "$build" $((n / 10))
exit $rc
