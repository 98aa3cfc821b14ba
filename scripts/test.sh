#!/usr/bin/env bash
# Runs every test of gdrproxy against the build in build/ (scripts/setup.sh makes it).
# Unit and integration tests run through CTest on this machine's real kernel; then the Soft-RoCE
# VM stage (scripts/rxe-vm.sh, 15 to 20 minutes) runs the real uverbs ABI under gdrproxy.
# GDRPROXY_SKIP_VM=1 skips that stage.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/gdrproxy ]] || scripts/setup.sh
cmake --build build -j"$(nproc)"

# Formatting is part of the build's contract: .clang-format at the root, checked here.
git ls-files '*.cc' '*.h' '*.c' | grep -v '^tests/fixtures/' | xargs clang-format --dry-run --Werror
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600

# Fuzz for a bounded time with libFuzzer (Debian's clang), in a separate build: every
# tests/fuzz/<name>_fuzz.cc, seeded with its committed corpus tests/fuzz/corpus/<name>/. The
# working corpus, logs and any crash file stay in build-fuzz/; a finding fails this script.
fuzz_seconds=${GDRPROXY_FUZZ_SECONDS:-60}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DGDRPROXY_BUILD_FUZZERS=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address" >/dev/null
fuzzers=()
for src in tests/fuzz/*_fuzz.cc; do
  fuzzers+=("$(basename "$src" .cc)")
done
cmake --build build-fuzz --target "${fuzzers[@]}" -j"$(nproc)"
for fuzzer in "${fuzzers[@]}"; do
  name=${fuzzer%_fuzz}
  corpus=build-fuzz/corpus/$name
  artifacts=build-fuzz/fuzz-artifacts/$name
  log=build-fuzz/fuzz-$name.log
  mkdir -p "$corpus" "$artifacts"
  seeds=()
  [[ -d tests/fuzz/corpus/$name ]] && seeds=("tests/fuzz/corpus/$name")
  echo "fuzzing $fuzzer for ${fuzz_seconds}s"
  status=0
  "build-fuzz/tests/fuzz/$fuzzer" -max_total_time="$fuzz_seconds" -timeout=5 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "${seeds[@]}" >"$log" 2>&1 ||
    status=$?
  grep -E '^(#[0-9]+[[:space:]]+DONE|stat::(number_of_executed_units|average_exec_per_sec))' \
    "$log" || true
  # libFuzzer exits non-zero on a crash, a sanitizer report, a timeout or an out-of-memory, and
  # names the input it saved ("Test unit written to ..."). Either one is a failure.
  found=$(sed -n 's/.*Test unit written to //p' "$log" | grep -v '/slow-unit-' || true)
  if ((status != 0)) || [[ -n $found ]]; then
    tail -n 60 "$log" >&2
    echo "FAIL: $fuzzer found a bug (exit status $status); input: ${found:-none saved}" >&2
    echo "reproduce: build-fuzz/tests/fuzz/$fuzzer INPUT; full log: $log" >&2
    exit 1
  fi
done

# Soft-RoCE VM stage: the real uverbs ABI under gdrproxy in a qemu guest.
# Exit 95: the guest kernel locked up (a soft lockup, its stacks printed by scripts/rxe-vm.sh);
# that is a defect of the guest kernel, so the stage runs once more, and its second result is
# the stage's.
if [[ ${GDRPROXY_SKIP_VM:-0} != 1 ]]; then
  vm_rc=0
  scripts/rxe-vm.sh || vm_rc=$?
  if ((vm_rc == 95)); then
    echo "test.sh: the guest kernel of the VM stage locked up (stacks above); running the stage once more" >&2
    vm_rc=0
    scripts/rxe-vm.sh || vm_rc=$?
  fi
  exit "$vm_rc"
fi
