#!/usr/bin/env bash
# A skipped integration case must say so to CTest (exit 77, SKIP_RETURN_CODE), never exit 0: a
# skip reported as a pass hides that a check did not run. The CUDA probe case skips where
# libcuda.so.1 is installed; a stand-in `ldconfig` on PATH (it only prints one library line)
# makes that true here.
# Usage: skip_contract_test.sh INTEGRATION_TEST_SH GDRPROXY DEVICE_CLIENT
set -uo pipefail
fake=$(mktemp -d /tmp/gdrproxy-skip.XXXXXX)
trap 'rm -rf "$fake"' EXIT
cat >"$fake/ldconfig" <<'SH'
#!/bin/sh
echo "	libcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1"
SH
chmod +x "$fake/ldconfig"
out=$(PATH="$fake:$PATH" "$1" "$2" "$3" cuda_probe_runs_without_cuda 2>&1)
rc=$?
if [[ $rc != 77 || $out != *SKIP* || $out == *PASS* ]]; then
  echo "FAIL: a skipping case exited $rc with: $out" >&2
  exit 1
fi
echo "PASS: a skipping case exits 77 ($out)"
