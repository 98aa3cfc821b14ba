#!/usr/bin/env bash
# A guarded driver that registers after the supervisor started (nvidia-uvm and rdma_ucm load on
# demand), as a hostile tenant would use it: an fd of one of its nodes, inherited from outside or
# opened inside, then an ioctl. The catalog was scanned before the driver existed, so the node is
# in no catalog; it must be refused (EACCES and one denial line naming the device number), not
# let through to the driver. The driver's registration is a stand-in: in a private mount
# namespace, /proc/misc or /proc/devices is covered (bind mount) by a copy in which an existing
# harmless device's number belongs to the driver, after gdrproxy has started; the node is a real
# char device reached through the real kernel. A device number of no guarded driver keeps
# reaching its driver (ordinary programs keep working).
# Usage: late_driver_test.sh GDRPROXY CASE   (root; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
TK=$(dirname "$GP")/gdrproxy-testkit  # the tests' tool: stand-in devices, exercisers
CASE=$2
[[ $EUID == 0 ]] || { echo "SKIP [$CASE]: needs root"; exit 77; }
WORK=$(mktemp -d /tmp/gdrproxy-late.XXXXXX)
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL [$CASE]: $*" >&2; exit 1; }
skip() { echo "SKIP [$CASE]: $*"; exit 77; }
show() { echo "--- $1:"; cat "$1"; }
expect_in() { grep -qF -- "$2" "$1" || { show "$1"; fail "expected '$2' in $1"; }; }

# The tenant: announces it runs (the supervisor's catalog is made by then), waits until the
# driver has registered, then issues REQUEST on fd 7 or on PATH.
cat >"$WORK/tenant.py" <<'PY'
import errno, fcntl, os, sys, time
work, how = sys.argv[1], sys.argv[2]
open(work + "/ready", "w").close()
for _ in range(200):
    if os.path.exists(work + "/go"):
        break
    time.sleep(0.05)
else:
    print("no-go"); sys.exit(3)
try:
    fd = 7 if how == "fd" else os.open(sys.argv[3], os.O_NOCTTY | (os.O_RDWR if how == "rdwr" else os.O_RDONLY))
    print("open OK")
except OSError as e:
    print("open", errno.errorcode[e.errno]); sys.exit(0)
try:
    fcntl.ioctl(fd, int(sys.argv[4], 0), bytearray(24)); print("ioctl ran")
except OSError as e:
    print("ioctl", errno.errorcode[e.errno])
PY

# late rdma|nvidia NODE FD-MODE HOW [PATH]: runs the tenant under `gdrproxy run` in a stand-in
# /dev with NODE (a real harmless device) open as fd 7 (FD-MODE: < or <>), and once the tenant
# runs, makes NODE's number a guarded driver's: rdma_cm (a misc minor) or nvidia-uvm (a character
# major). The tenant opens PATH (default NODE) unless HOW is fd, and issues $REQ (a uverbs
# number, always trapped). With NO_UVM=1 the stand-in /dev has no nvidia-uvm when gdrproxy starts.
REQ=0xc0181b01
NO_UVM=0
late() {
  local driver=$1 node=$2 mode=$3 how=$4 path=${5:-$2} num maj min
  [[ -c $node ]] || skip "$node is not here"
  num=$(stat -c '%t %T' "$node")
  maj=$((16#${num% *})); min=$((16#${num#* }))
  if [[ $driver == rdma ]]; then
    (( maj == 10 )) || skip "$node is not a misc device"
    sed "s/^ *$min .*/$min rdma_cm/" /proc/misc >"$WORK/misc"
    grep -q "^$min rdma_cm$" "$WORK/misc" || skip "minor $min is not in /proc/misc"
    echo /proc/misc >"$WORK/covers"
  else
    { echo "Character devices:"; printf '%3d nvidia-uvm\n' "$maj"; sed 1d /proc/devices; } >"$WORK/misc"
    echo /proc/devices >"$WORK/covers"
  fi
  rm -f "$WORK/ready" "$WORK/go"
  # shellcheck disable=SC2016 # expanded by the inner shell
  timeout -k 5 60 "$TK" standin sh -c '
    gp=$0 work=$1 node=$2 mode=$3 how=$4 path=$5 req=$6 no_uvm=$7
    if [ "$no_uvm" = 1 ]; then umount /dev/nvidia-uvm 2>/dev/null; rm -f /dev/nvidia-uvm; fi
    if [ "$mode" = "<>" ]; then exec 7<>"$node"; else exec 7<"$node"; fi
    "$gp" run --grant uverbs0 -- python3 "$work/tenant.py" "$work" "$how" "$path" "$req" &
    run=$!
    i=0; while [ ! -e "$work/ready" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
    mount --bind "$work/misc" "$(cat "$work/covers")" || { echo "cannot cover /proc"; kill $run; exit 9; }
    touch "$work/go"
    wait $run' "$GP" "$WORK" "$node" "$mode" "$how" "$path" "$REQ" "$NO_UVM" >"$WORK/out" 2>"$WORK/err"
  local rc=$?
  [[ $rc == 9 ]] && skip "cannot bind-mount over /proc here"
  [[ $rc == 0 ]] || { show "$WORK/out"; show "$WORK/err"; fail "exit $rc"; }
  NUMBER="$maj:$min"
}

expect_refused_ioctl() {
  expect_in "$WORK/out" "ioctl EACCES"
  expect_in "$WORK/err" "denied IOCTL_$REQ on"
  expect_in "$WORK/err" "char device $NUMBER ("
  expect_in "$WORK/err" "belongs to a guarded driver but was not catalogued when this sandbox started"
  [[ $(grep -c "^gdrproxy: denied" "$WORK/err") == 1 ]] || { show "$WORK/err"; fail "not one denial line"; }
}

case_late_driver_inherited_fd_ioctl_refused() {
  # An fd of the node opened outside (inherited, as a bind of /dev made outside gives it).
  late rdma /dev/hwrng "<" fd
  expect_refused_ioctl
  late nvidia /dev/cpu/0/cpuid "<" fd
  expect_refused_ioctl
}

case_late_driver_node_opened_inside_refused() {
  # Opened by the tenant: read-only (untrapped where Landlock checks ioctls: the ioctl is
  # refused) and for writing (trapped: the broker refuses the open).
  late rdma /dev/hwrng "<" rdonly
  expect_in "$WORK/out" "open OK"
  expect_refused_ioctl
  late nvidia /dev/cpu/0/cpuid "<" rdwr
  expect_in "$WORK/out" "open EACCES"
  expect_in "$WORK/err" "char device $NUMBER ("
}

case_late_driver_gets_no_untrapped_request() {
  # A sandbox that starts with no nvidia-uvm node lets no UVM request run untrapped (enforce mode
  # without a trace lets requests the policy allows whatever their parameters skip the trap, on
  # classes whose nodes are all granted): UVM_INITIALIZE on a node of nvidia-uvm loaded later
  # traps and is refused.
  REQ=0x30000001 NO_UVM=1
  late nvidia /dev/cpu/0/cpuid "<" fd
  expect_refused_ioctl
}

case_device_of_no_guarded_driver_still_reaches_its_driver() {
  # Not an attack: a device number that no guarded driver holds, also after a driver registered
  # later, is no device of ours: the ioctl reaches its driver (ENOTTY), nothing is denied.
  late rdma /dev/hwrng "<" rdonly /dev/null
  expect_in "$WORK/out" "open OK"
  expect_in "$WORK/out" "ioctl ENOTTY"
  ! grep -q denied "$WORK/err" || { show "$WORK/err"; fail "an ordinary device was refused"; }
}

"case_$CASE"
echo "PASS [$CASE]"
