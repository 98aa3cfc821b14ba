#!/usr/bin/env bash
# Runs every test of gdrproxy against the build in build/ (scripts/setup.sh makes it).
# Unit and integration tests run through CTest on this machine's real kernel; then the Soft-RoCE
# VM stage (scripts/rxe-vm.sh, about 3 minutes) runs the real uverbs ABI under gdrproxy.
# GDRPROXY_SKIP_VM=1 skips that stage.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/gdrproxy ]] || scripts/setup.sh
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600
if [[ ${GDRPROXY_SKIP_VM:-0} != 1 ]]; then
  scripts/rxe-vm.sh
fi
