#!/usr/bin/env bash
# CTest test vm.checkout_under_tmp_visible_in_guest: scripts/rxe-vm.sh works whatever the path of
# the checkout. The guest mounts fresh tmpfs on /tmp and /run, so a checkout there used to vanish
# in the guest (the stage ended with status 127). Here a minimal checkout (this tree's scripts/)
# lies under a fresh /tmp directory and is started through a symlinked path; its build tree is a
# symlink to another /tmp directory holding the gdrproxy binary; the guest script lies in a third
# one beside a file it sources. The guest checks what it sees and reports it; one boot, ~15 s.
# A checkout at a path with a space must be refused before booting (exit 96, one line).
#
# Usage: checkout-path-test.sh SOURCE_DIR GDRPROXY_BINARY
# Exit status: 0 pass, 1 fail, 77 skipped (qemu, busybox-static or the guest kernel missing).
set -euo pipefail
src=${1:?usage: checkout-path-test.sh SOURCE_DIR GDRPROXY_BINARY}
gdrproxy=${2:?usage: checkout-path-test.sh SOURCE_DIR GDRPROXY_BINARY}
tmp=$(realpath "$(mktemp -d /tmp/gdrvm-checkout.XXXXXX)")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$tmp/repo/scripts" "$tmp/build-elsewhere" "$tmp/guest"
cp -r "$src/scripts/rxe-vm.sh" "$src/scripts/vm" "$tmp/repo/scripts/"
cp -l "$gdrproxy" "$tmp/build-elsewhere/gdrproxy" 2>/dev/null || cp "$gdrproxy" "$tmp/build-elsewhere/gdrproxy"
ln -s ../build-elsewhere "$tmp/repo/build"
ln -s repo "$tmp/link"
token=marker-$$-$RANDOM
echo "$token" >"$tmp/repo/marker"

# The guest script (POSIX sh, runs in the VM): prints one "problem:" line per thing that is wrong.
echo 'neighbour() { echo here; }' >"$tmp/guest/neighbour.sh"
cat >"$tmp/guest/check.sh" <<'EOF'
#!/bin/sh
want_repo=$1 want_build=$2 token=$3
. "$(dirname "$0")/neighbour.sh" || echo "problem: the file beside the guest script is missing"
[ "$(neighbour)" = here ] || echo "problem: neighbour.sh not sourced"
[ "$GDRVM_REPO" = "$want_repo" ] || echo "problem: GDRVM_REPO=$GDRVM_REPO, expected $want_repo"
[ "$GDRVM_BUILD" = "$want_build" ] || echo "problem: GDRVM_BUILD=$GDRVM_BUILD, expected $want_build"
[ "$(pwd)" = "$want_repo" ] || echo "problem: started in $(pwd), expected $want_repo"
cd "$GDRVM_REPO" || echo "problem: cannot cd to $GDRVM_REPO"
[ "$(cat "$GDRVM_REPO/marker" 2>/dev/null)" = "$token" ] || echo "problem: $GDRVM_REPO/marker not seen"
[ -x "$GDRVM_BUILD/gdrproxy" ] || echo "problem: no $GDRVM_BUILD/gdrproxy"
"$GDRVM_BUILD/gdrproxy" --help >/dev/null 2>&1 || echo "problem: $GDRVM_BUILD/gdrproxy --help failed"
[ -x "$GDRVM_REPO/scripts/rxe-vm.sh" ] || echo "problem: no $GDRVM_REPO/scripts/rxe-vm.sh"
# The guest's own /tmp is still a writable tmpfs, and writes to the checkout stay in the guest.
echo x >/tmp/guest-tmp-writable || echo "problem: /tmp not writable in the guest"
echo x >"$GDRVM_REPO/guest-wrote-this" || echo "problem: the checkout is not writable in the guest"
echo "$token" >"$GDRVM_OUT/seen"
EOF
chmod +x "$tmp/guest/check.sh"

rc=0
RXE_VM_OUT=$tmp/out RXE_VM_TIMEOUT=200 RXE_VM_INSTALL=0 timeout -k 5 240 "$tmp/link/scripts/rxe-vm.sh" \
  "$tmp/guest/check.sh" "$tmp/repo" "$tmp/build-elsewhere" "$token" >"$tmp/rxe-vm.log" 2>&1 || rc=$?
if ((rc == 97)); then
  echo "SKIP: VM prerequisites missing: $(grep -m1 missing "$tmp/rxe-vm.log" || tail -1 "$tmp/rxe-vm.log")"
  exit 77
fi
problems=$(grep '^problem:' "$tmp/rxe-vm.log" || true)
if ((rc != 0)) || [[ -n $problems ]] || [[ $(cat "$tmp/out/share/seen" 2>/dev/null) != "$token" ]]; then
  tail -30 "$tmp/rxe-vm.log" >&2
  fail "guest script under /tmp with the checkout under /tmp: status $rc${problems:+; $problems}"
fi
[[ ! -e $tmp/repo/guest-wrote-this ]] || fail "the guest's write to the checkout reached the host"
echo "PASS: the guest saw the checkout, build tree, marker and guest script under $tmp"

# Refused before booting: a checkout whose path has a space.
mkdir -p "$tmp/with space"
cp -r "$tmp/repo/scripts" "$tmp/with space/"
rc=0
out=$(RXE_VM_OUT=$tmp/out2 RXE_VM_INSTALL=0 timeout 30 "$tmp/with space/scripts/rxe-vm.sh" "$tmp/guest/check.sh" 2>&1) || rc=$?
((rc == 96)) || fail "checkout at a path with a space: status $rc, expected 96: $out"
[[ $out == *"spaces are not supported"* && $(wc -l <<<"$out") == 1 ]] || fail "expected one line naming the reason: $out"
[[ ! -e $tmp/out2/serial.log ]] || fail "booted although the path was refused"
echo "PASS: a checkout at a path with a space is refused before booting: $out"
