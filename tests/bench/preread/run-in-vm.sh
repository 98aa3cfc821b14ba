#!/usr/bin/env bash
# Runs the pre-read evaluation in the soft-RoCE VM (scripts/rxe-vm.sh). The one idea: the host this
# project builds on refuses tracing programs (fentry: EPERM; no kprobes), so the evaluation runs
# where the kernel is Debian's. Usage: tests/bench/preread/run-in-vm.sh   (after the build; numbers
# under TCG compare only as ratios, and vary by round: read the median)
set -euo pipefail
cd "$(dirname "$0")/../../.."
RXE_VM_OUT=${RXE_VM_OUT:-build/preread-vm} RXE_VM_TIMEOUT=${RXE_VM_TIMEOUT:-600} \
  exec scripts/rxe-vm.sh tests/bench/preread/vm-guest.sh
