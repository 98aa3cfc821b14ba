#!/usr/bin/env bash
# Runs the BPF LSM evaluation in the soft-RoCE VM (scripts/rxe-vm.sh), whose kernel command line
# enables the BPF LSM. The one idea: the host this project builds on refuses BPF LSM programs
# (EPERM for root, even for one that returns 0), so the evaluation runs where the kernel is ours.
# Usage: tests/bench/lsm/run-in-vm.sh   (after the build; numbers under TCG compare only as ratios)
set -euo pipefail
cd "$(dirname "$0")/../../.."
RXE_VM_OUT=${RXE_VM_OUT:-build/lsm-vm} RXE_VM_TIMEOUT=${RXE_VM_TIMEOUT:-600} \
  exec scripts/rxe-vm.sh tests/bench/lsm/vm-guest.sh
