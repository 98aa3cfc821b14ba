#!/usr/bin/env bash
# Runs every test of gdrproxy against the build in build/ (scripts/setup.sh makes it).
# Unit and integration tests run through CTest on this machine's real kernel.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/gdrproxy ]] || scripts/setup.sh
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600
