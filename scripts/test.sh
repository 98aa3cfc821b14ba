#!/usr/bin/env bash
# Runs every test of gdrproxy against the build in build/ (scripts/setup.sh makes it).
# Unit and integration tests run through CTest on this machine's real kernel; then the Soft-RoCE
# VM stage (scripts/rxe-vm.sh, about 4 minutes) runs the real uverbs ABI under gdrproxy.
# GDRPROXY_SKIP_VM=1 skips that stage.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/gdrproxy ]] || scripts/setup.sh
cmake --build build -j"$(nproc)"

# Formatting is part of the build's contract: .clang-format at the root, checked here.
git ls-files '*.cc' '*.h' '*.c' | grep -v '^tests/fixtures/' | xargs clang-format --dry-run --Werror
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600

# Fuzz the decoders for a bounded time with libFuzzer (Debian's clang), in a separate build.
fuzz_seconds=${GDRPROXY_FUZZ_SECONDS:-20}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DGDRPROXY_BUILD_FUZZERS=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address" >/dev/null
for fuzzer in uverbs_decoder_fuzz nvidia_decoder_fuzz; do
  [[ -f tests/fuzz/$fuzzer.cc ]] || continue
  cmake --build build-fuzz --target "$fuzzer" -j"$(nproc)"
  mkdir -p "build-fuzz/corpus/$fuzzer"
  echo "fuzzing $fuzzer for ${fuzz_seconds}s"
  seeds=tests/fuzz/corpus/${fuzzer%_decoder_fuzz}  # recorded real calls, where there are any
  [[ -d $seeds ]] || seeds=
  "build-fuzz/tests/fuzz/$fuzzer" -max_total_time="$fuzz_seconds" -timeout=5 -rss_limit_mb=2048 \
    -print_final_stats=1 "build-fuzz/corpus/$fuzzer" $seeds 2>&1 | tail -n 4
done

# Soft-RoCE VM stage: the real uverbs ABI under gdrproxy in a qemu guest.
if [[ ${GDRPROXY_SKIP_VM:-0} != 1 ]]; then
  scripts/rxe-vm.sh
fi
