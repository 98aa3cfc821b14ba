#!/usr/bin/env bash
# Golden PFC of the container profiles `gdrproxy oci seccomp` writes: what libseccomp (the one
# runc and crun link) compiles each merged profile to, pinned byte for byte. The idea not to
# miss: a change in the merge, in the trap lists or in libseccomp's handling of mixed rules shows
# here as a diff of the filter itself. After an intended change: UPDATE_GOLDEN=1 to rewrite.
# Usage: golden_test.sh GDRPROXY
set -uo pipefail
GP=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
base=$here/docker_format_base.json
failures=0
check() {
  local name=$1 out
  shift
  out=$("$GP" oci seccomp --listener /run/gdrproxy/agent.sock --wait-killable-recv no --pfc "$@" 2>&1) ||
    { echo "FAIL [$name]: gdrproxy oci seccomp $*: $out"; failures=$((failures + 1)); return; }
  if [[ ${UPDATE_GOLDEN:-0} == 1 ]]; then
    printf '%s\n' "$out" >"$here/golden/$name.pfc"
    echo "updated golden/$name.pfc"
    return
  fi
  if ! diff -u "$here/golden/$name.pfc" <(printf '%s\n' "$out") >"/tmp/golden-$name.diff"; then
    head -40 "/tmp/golden-$name.diff"
    echo "FAIL [$name]: the compiled filter differs from golden/$name.pfc (UPDATE_GOLDEN=1 if intended)"
    failures=$((failures + 1))
  else
    echo "PASS [$name]"
  fi
  rm -f "/tmp/golden-$name.diff"
}
check no_base
# The old flag is accepted by existing scripts and changes nothing: the call is always trapped.
check no_base --broker-pidfd-getfd
check docker_format --base "$base" --kernel-release 6.1.0 --caps CHOWN,SETUID
check docker_format_ptrace_admin --base "$base" --kernel-release 5.2.0 --caps SYS_PTRACE,SYS_ADMIN
exit $((failures > 0))
