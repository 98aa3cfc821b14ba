#!/usr/bin/env bash
# Brokered pidfd_getfd (`gdrproxy run --broker-pidfd-getfd`): processes of one sandbox take each
# other's fds through gdrproxy (the call is trapped and performed with gdrproxy's rights), and a
# process outside the sandbox, named by a pidfd the sandbox was handed, is refused. The idea not
# to miss: the trace must say "broker", so a pass cannot come from the kernel allowing the call
# natively, and the refusal must be gdrproxy's own (its denial line), not a missing permission.
# Usage: pidfd_getfd_test.sh GDRPROXY FD_SHARE CASE   (root; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
F=$(realpath "$2")
CASE=$3
[[ $EUID == 0 ]] || { echo "SKIP [$CASE]: needs root"; exit 77; }
WORK=$(mktemp -d /tmp/gdrproxy-pidfd.XXXXXX)
chmod 755 "$WORK"
SERVER=
trap '[[ -n $SERVER ]] && kill $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
fail() { echo "FAIL [$CASE]: $*" >&2; exit 1; }
show() { echo "--- $1:"; cat "$1"; }

case_brokered_within_the_sandbox() {
  timeout -k 5 60 "$GP" run --broker-pidfd-getfd --trace-json "$WORK/t.jsonl" -q -- sh -c "
    $F serve $WORK/p & s=\$!
    for i in \$(seq 100); do [ -s $WORK/p ] && break; sleep 0.05; done
    read pid fd < $WORK/p; $F take \$pid \$fd; kill \$s" >"$WORK/out" 2>&1 || { show "$WORK/out"; fail "exit $?"; }
  grep -q "^took: shared-by-" "$WORK/out" || { show "$WORK/out"; fail "the fd was not taken"; }
  jq -e -s 'any(.[]; .syscall == "pidfd_getfd" and .decision == "broker" and .result >= 0)' \
    "$WORK/t.jsonl" >/dev/null || { show "$WORK/t.jsonl"; fail "no brokered pidfd_getfd in the trace"; }
}

case_process_outside_the_sandbox_refused() {
  # A process on the host serves an fd; the sandbox is handed a pidfd of it (inherited) and
  # asks for the fd through it.
  "$F" serve "$WORK/p" &
  SERVER=$!
  for i in $(seq 100); do [[ -s $WORK/p ]] && break; sleep 0.05; done
  read -r pid fd <"$WORK/p"
  python3 -c 'import os, sys
pidfd = os.pidfd_open(int(sys.argv[1])); os.set_inheritable(pidfd, True)
os.execvp(sys.argv[2], sys.argv[2:] + [str(pidfd)])' "$pid" timeout -k 5 60 "$GP" run --broker-pidfd-getfd -- \
    "$F" take-pidfd "$fd" >"$WORK/out" 2>&1
  grep -q "^take ERR EPERM" "$WORK/out" || { show "$WORK/out"; fail "the host process's fd was taken"; }
  grep -q "denied pidfd_getfd by pid .*pid $pid is outside this sandbox" "$WORK/out" ||
    { show "$WORK/out"; fail "no denial line naming the host process"; }
}

"case_$CASE"
echo "PASS [$CASE]"
