#!/usr/bin/env bash
# Packs build/gdrproxy, the tests' tool build/gdrproxy-testkit and the shared libraries they need
# that a GPU machine without a package manager may lack into DIR (default .gpu-bundle, ignored by
# git), for tests/gpu/run.sh there.
#   scripts/gpu-bundle.sh [--perf] [DIR]
# --perf also packs this machine's perf and its libraries (about 27 MB more), with which
# tests/gpu/run.sh profiles the per-call bench there (tests/bench/ioctl_profile.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
with_perf=0
if [[ ${1:-} == --perf ]]; then
  with_perf=1
  shift
fi
dir=${1:-.gpu-bundle}
rm -rf "$dir"
mkdir -p "$dir/lib"
cp build/gdrproxy "$dir/"
# Debug info goes, the symbol table stays: a profile there names gdrproxy's functions.
strip --strip-debug "$dir/gdrproxy"
# The tests' tool (stand-in devices, the CUDA probe), for tests/gpu/run.sh.
cp build/gdrproxy-testkit "$dir/" && strip "$dir/gdrproxy-testkit"
# The security tests' attack client, for the real-NVIDIA attacks of tests/gpu/run.sh.
cp build/tests/security/attack_client "$dir/" && strip "$dir/attack_client"
# The agent tests' runtime stand-in, for tests/gpu/agent_sessions.sh.
cp build/tests/agent/runtime_client "$dir/" && strip "$dir/runtime_client"
# tests/bench/ioctl_latency.sh takes the bundle as its build directory.
mkdir -p "$dir/tests/bench" && cp build/tests/bench/ioctl_bench build/tests/bench/soak_client "$dir/tests/bench/"
# tests/gpu/run.sh's caller-side clock (an LD_PRELOAD library), built here: the GPU machine may
# have no compiler.
gcc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$dir/call_clock.so" tests/gpu/call_clock.c -ldl
# Debian's runc (needs libseccomp, copied below with gdrproxy's), for tests/gpu/runc_container.sh.
if command -v runc >/dev/null; then cp "$(command -v runc)" "$dir/"; fi
# Static busybox, the userland of the soak's containers (tests/oci/lib.sh, OCI_BUSYBOX).
[[ -x /bin/busybox ]] && cp /bin/busybox "$dir/"
# A deny-by-default base profile (every syscall this machine's headers name allowed, as container
# engines' defaults are built): a container's untrapped requests need one (tests/gpu/runc_container.sh).
python3 - "$dir/deny-default-base.json" <<'PY'
import json, re, sys
names = sorted(set(re.findall(r"#define __NR_(\w+) ", open("/usr/include/x86_64-linux-gnu/asm/unistd_64.h").read())))
json.dump({"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
           "syscalls": [{"names": names, "action": "SCMP_ACT_ALLOW"}]}, open(sys.argv[1], "w"))
PY
# copy_libs BINARY DEST: the shared libraries BINARY needs, except glibc and libstdc++ (those
# are newer on the GPU image).
copy_libs() {
  ldd "$1" | awk '/=> \//{print $3}' |
    { grep -vE '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s)\.so' || true; } |
    while read -r lib; do cp -L "$lib" "$2/"; done
}
# Every binary of the bundle's: gdrproxy links its C dependencies in, but the tests' tools and
# Debian's runc load libseccomp, libbpf and libnl from the system.
for b in "$dir/gdrproxy" "$dir/gdrproxy-testkit" "$dir/attack_client" "$dir/runtime_client" \
  "$dir/tests/bench/ioctl_bench" "$dir/tests/bench/soak_client" "$dir/runc"; do
  [[ -e $b ]] && copy_libs "$b" "$dir/lib"
done
if ((with_perf)); then
  command -v perf >/dev/null || { echo "gpu-bundle: --perf needs perf here (apt-get install linux-perf)" >&2; exit 1; }
  mkdir -p "$dir/perf/lib"
  cp -L "$(command -v perf)" "$dir/perf/"
  copy_libs "$(command -v perf)" "$dir/perf/lib"
fi
du -sh "$dir"
