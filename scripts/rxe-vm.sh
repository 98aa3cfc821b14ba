#!/usr/bin/env bash
# Soft-RoCE test stage: boots Debian's stock kernel under qemu with this machine's root filesystem
# (so the installed rdma-core/perftest tools) visible read-only through virtio-9p, lets the guest
# load rdma_rxe, runs a guest script there and exits with that script's status. The checkout and
# its build tree are shared as their own 9p mounts at their real paths: the guest mounts fresh
# tmpfs on /tmp and /run, which would hide a checkout there. The machines this project is built
# on have no RDMA device and a kernel without InfiniBand, so this VM is where the real uverbs ABI
# is exercised.
#
# The one idea: the host side is only a bounded launcher. Every step has a time limit, the guest
# reports through a file on a writable 9p share (console parsing is the fallback), and an EXIT trap
# kills qemu, so nothing outlives this script whatever happens.
#
# Usage: scripts/rxe-vm.sh [GUEST_SCRIPT [ARGS...]]   (default: tests/vm/run-tests.sh)
# A guest script inside the checkout runs at its own path; one elsewhere (a file under /tmp, say)
# runs as /run/vmscript/NAME, with its directory shared read-only there.
# Environment:
#   RXE_VM_OUT      host directory for console.log, the initramfs and the guest's results
#                   (default build/rxe-vm)
#   RXE_VM_TIMEOUT  seconds for the whole VM, boot to power-off (default 1800: the stage takes
#                   15 to 20 minutes on a 2-core machine, longer while other work runs beside it)
#   RXE_VM_SMP, RXE_VM_MEM   vCPUs (2) and MiB (2048)
#   RXE_VM_ACCEL    tcg (default) or kvm (only where real VMX/SVM is available)
#   RXE_VM_TCG_THREAD  single (default): one host thread runs both vCPUs. multi is faster, but
#                   under it the guest's text patching (a syscall tracepoint's static call, when
#                   an observer attaches or detaches) was seen torn: an int3 Oops in
#                   trace_syscall_enter on 7.3, a livelock on 6.1
#   RXE_VM_KERNEL   backports (default): Debian's newest backports kernel, fetched and verified by
#                   scripts/vm/guest-kernel.sh into build/vm-kernel/ (unpacked, not installed;
#                   reused offline once there), whose rxe has a UDP socket per network namespace,
#                   which the two-container test needs; installed: a kernel installed here
#   RXE_VM_KVER     with RXE_VM_KERNEL=installed, its version (default: newest *-amd64 with vmlinuz)
#   RXE_VM_APPEND   extra guest kernel command-line words (the defaults print lockup stacks and
#                   panic on a soft lockup of 60 s, twice watchdog_thresh=30: a livelocked guest
#                   ends in a minute, not at the limit, while a host that stalls the emulator for
#                   a few seconds does not fail the stage)
#   RXE_VM_LSM      the guest's lsm= list (default landlock,lockdown,yama,apparmor,bpf: the BPF
#                   LSM on, for `gdrproxy run --lsm`, tests/vm/lsm.sh and tests/bench/lsm)
#   RXE_VM_INSTALL=0  report missing packages (exit 97) instead of installing them as root
#   GDRVM_SKIP_BENCH=1, GDRVM_BENCH_ROUNDS=N   passed on to the guest tests
# Exit status: the guest script's status; 96 a path the guest cannot use (the reason is printed);
# 95 the guest kernel locked up (a soft lockup: a kernel defect no process can cause, its stacks
# named on the console; scripts/test.sh runs the stage once more); 97
# prerequisites missing; 98 no status from the guest (kernel panic, hang, host-side timeout);
# 99 guest init could not mount the host's files or run the guest script.
set -euo pipefail
# Real paths (no symlinks): the guest mounts the checkout at exactly this path.
repo=$(cd "$(dirname "$0")/.." && pwd -P)
build=$(realpath -m "$repo/build")
out=${RXE_VM_OUT:-$repo/build/rxe-vm}
vm_timeout=${RXE_VM_TIMEOUT:-1800}
smp=${RXE_VM_SMP:-2}
mem=${RXE_VM_MEM:-2048}
accel=${RXE_VM_ACCEL:-tcg}
script=$(realpath -e "${1:-$repo/tests/vm/run-tests.sh}" 2>/dev/null) || { echo "rxe-vm: no guest script ${1:-}" >&2; exit 97; }
(($# > 0)) && shift
script_args=("$@")
t_start=$SECONDS
say() { printf '[rxe-vm %3ds] %s\n' $((SECONDS - t_start)) "$*" >&2; }

# ---- paths the guest sees ----------------------------------------------------------------------
# The guest's own mounts (scripts/vm/init.sh, stage2.sh) are tmpfs on /tmp and /run, /run/vmshare,
# /run/vmscript and /dev, /proc, /sys with what lies under them. A checkout or build tree mounted
# over or under those would hide them or be hidden, so such a layout fails here, before booting.
guest_path_problem() {
  case $1 in
    *[[:space:]]*) echo "paths with spaces are not supported" ;;
    / | /tmp | /run) echo "the guest mounts its own file system there" ;;
    /dev | /dev/* | /proc | /proc/* | /sys | /sys/* | /run/vmshare | /run/vmshare/* | /run/vmscript | /run/vmscript/*)
      echo "the guest has its own file systems there" ;;
  esac
}
for dir in "$repo" "$build"; do
  why=$(guest_path_problem "$dir")
  [[ -z $why ]] || { say "cannot share $dir with the guest: $why"; exit 96; }
done
# A guest script outside the checkout comes through a share of its own, so only spaces matter.
[[ $script != *[[:space:]]* ]] || { say "guest script $script: paths with spaces are not supported"; exit 96; }
[[ -f $script ]] || { say "no guest script $script"; exit 97; }
[[ -x $script ]] || { say "the guest script $script is not executable"; exit 96; }

# ---- prerequisites ---------------------------------------------------------------------------
# command -> Debian package; the same packages are in scripts/setup.sh for CI.
declare -A need=(
  [qemu-system-x86_64]=qemu-system-x86 [busybox]=busybox-static [cpio]=cpio [modprobe]=kmod
  [ibv_devinfo]=ibverbs-utils [ib_send_lat]=perftest [rping]=rdmacm-utils [rdma]=iproute2
  [jq]=jq [gzip]=gzip [runc]=runc [crun]=crun [dockerd]=docker.io
)
kernel_source=${RXE_VM_KERNEL:-backports}
case $kernel_source in
  backports) need+=([curl]=curl [gpgv]=gpgv [xz]=xz-utils [dpkg-deb]=dpkg) ;;
  installed) ;;
  *) say "RXE_VM_KERNEL=$kernel_source: use backports or installed"; exit 97 ;;
esac
find_kver() {
  local d
  for d in /lib/modules/*-amd64; do
    [[ -r /boot/vmlinuz-${d##*/} ]] && echo "${d##*/}"
  done | sort -rV | head -1
}
missing_pkgs() {
  local c
  for c in "${!need[@]}"; do command -v "$c" >/dev/null || echo "${need[$c]}"; done
  [[ $kernel_source != installed || -n $(find_kver) ]] || echo linux-image-amd64
  # busybox must be the static one: the initramfs has no libc
  ! ldd /bin/busybox >/dev/null 2>&1 || echo busybox-static
}
missing=$(missing_pkgs | sort -u | tr '\n' ' ')
if [[ -n $missing ]]; then
  if [[ $(id -u) -ne 0 || ${RXE_VM_INSTALL:-1} == 0 ]]; then
    say "missing packages: $missing(scripts/setup.sh installs them; so does this script, as root)"
    exit 97
  fi
  say "installing $missing"
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck disable=SC2086 # word splitting of the package list is intended
  if ! { timeout 300 apt-get update -q && timeout 600 apt-get install -y -q --no-install-recommends $missing; } >"${TMPDIR:-/tmp}/rxe-vm-apt.log" 2>&1; then
    say "apt-get failed, see ${TMPDIR:-/tmp}/rxe-vm-apt.log"
    exit 97
  fi
  missing=$(missing_pkgs | sort -u | tr '\n' ' ')
  [[ -z $missing ]] || { say "still missing after install: $missing"; exit 97; }
fi
# The guest kernel and the root its modules lie under (ROOT/lib/modules/KVER).
if [[ $kernel_source == backports ]]; then
  read -r kver modroot < <(timeout 900 "$repo/scripts/vm/guest-kernel.sh" "$build/vm-kernel") ||
    { say "no guest kernel (scripts/vm/guest-kernel.sh said why above; RXE_VM_KERNEL=installed boots an installed one)"; exit 97; }
  kernel=$modroot/vmlinuz
else
  kver=${RXE_VM_KVER:-$(find_kver)}
  modroot=/
  kernel=/boot/vmlinuz-$kver
fi
[[ -r $kernel && -d $modroot/lib/modules/$kver ]] || { say "no kernel $kernel with modules"; exit 97; }
[[ -e /dev/kvm || $accel == tcg ]] || { say "RXE_VM_ACCEL=$accel but no /dev/kvm"; exit 97; }

# ---- the guest's inputs ----------------------------------------------------------------------
mkdir -p "$out"
share=$out/share
rm -rf "$share"
mkdir -p "$share"
timeout 60 "$repo/scripts/vm/build-initramfs.sh" "$out/initramfs.cpio.gz" "$kver" "$modroot" 2>"$out/initramfs.log" \
  || { cat "$out/initramfs.log" >&2; exit 97; }
# The guest's init mounts each of these 9p shares ("TAG PATH" lines in $share/mounts, parents
# first) after its tmpfs, each under a tmpfs overlay like the root: writable in the guest only.
declare -A shared=([checkout]=$repo) at=([checkout]=$repo)
[[ $build == "$repo"/* ]] || { shared[buildtree]=$build; at[buildtree]=$build; }
guest_script=$script
if [[ $script != "$repo"/* && $script != "$build"/* ]]; then
  shared[guestscript]=$(dirname "$script")
  at[guestscript]=/run/vmscript
  guest_script=/run/vmscript/$(basename "$script")
fi
virtfs=()
for tag in "${!shared[@]}"; do
  # qemu's option syntax: a comma in a value is written twice
  virtfs+=(-virtfs "local,path=${shared[$tag]//,/,,},mount_tag=$tag,security_model=none,readonly=on,multidevs=remap")
done
for tag in "${!shared[@]}"; do printf '%s %s\n' "$tag" "${at[$tag]}"; done | LC_ALL=C sort -k2 >"$share/mounts"
# The guest sources this file (see scripts/vm/stage2.sh). The guest script gets 60 s less than the
# VM (boot, kill, sync and power-off under a loaded emulator) so that its own timeout, not qemu's,
# ends a hang, and the status still comes back.
{
  printf 'GDRVM_SCRIPT=%q\n' "$guest_script"
  printf 'GDRVM_ARGS=%q\n' "${script_args[*]:-}"
  printf 'GDRVM_TIMEOUT=%d\n' $((vm_timeout - 60))
  printf 'GDRVM_CWD=%q\nGDRVM_REPO=%q\nGDRVM_BUILD=%q\n' "$repo" "$repo" "$build"
  printf 'GDRVM_OUT=/run/vmshare\n'
  # A kernel that is not installed here has its modules in the build tree: stage2.sh binds them
  # at /lib/modules/KVER in the guest.
  [[ $modroot == / ]] || printf 'GDRVM_MODULES=%q\n' "$modroot/lib/modules/$kver"
  # Knobs of the guest scripts pass through from this environment (GDRVM_SKIP_BENCH=1, ...).
  for v in GDRVM_SKIP_BENCH GDRVM_BENCH_ROUNDS; do
    if [[ -n ${!v:-} ]]; then printf "%s=%q\n" "$v" "${!v}"; fi
  done
  printf 'GDRVM_HOST_DATE=%q\nGDRVM_HOST_MACHINE=%q\n' "$(date -u '+%Y-%m-%d %H:%M UTC')" \
    "$(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))"
} >"$share/env"

case $accel in
  kvm) accel_args=(-accel kvm -cpu host) ;;
  *) accel_args=(-accel "tcg,thread=${RXE_VM_TCG_THREAD:-single}" -cpu max) ;;
esac

# ---- boot ------------------------------------------------------------------------------------
qemu_pid=
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  if [[ -n $qemu_pid ]] && kill -0 "$qemu_pid" 2>/dev/null; then
    say "stopping qemu (pid $qemu_pid)"
    kill -TERM "$qemu_pid" 2>/dev/null || true
    sleep 1
    kill -KILL "$qemu_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

lsm_list="lsm=${RXE_VM_LSM:-landlock,lockdown,yama,apparmor,bpf}"
rm -f "$out/serial.log" "$out/console.log" "$out/qemu.log"
say "booting $kernel ($accel, $smp vCPU, $mem MiB), guest script $script, limit ${vm_timeout}s"
# -nic none: the guest has no network device, so RoCE traffic cannot leave it (rxe0 sits on lo,
# the rdma_cm device on a dummy netdev). Console on the serial port, stdin closed (CI has none).
timeout -k 5 "$vm_timeout" qemu-system-x86_64 "${accel_args[@]}" -smp "$smp" -m "$mem" \
  -machine q35 -display none -monitor none -serial "file:$out/serial.log" -no-reboot -nic none \
  -kernel "$kernel" -initrd "$out/initramfs.cpio.gz" \
  -append "console=ttyS0 panic=-1 loglevel=5 watchdog_thresh=30 softlockup_panic=1 softlockup_all_cpu_backtrace=1 $lsm_list ${RXE_VM_APPEND:-}" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs "local,path=${share//,/,,},mount_tag=vmshare,security_model=none" "${virtfs[@]}" \
  </dev/null >"$out/qemu.log" 2>&1 &
qemu_pid=$!
# Follow the serial console while qemu runs; stop following once qemu is gone.
tail -n +1 -F --pid="$qemu_pid" "$out/serial.log" 2>/dev/null | tr -d '\r' &
tail_pid=$!
qrc=0
wait "$qemu_pid" || qrc=$?
qemu_pid=
wait "$tail_pid" 2>/dev/null || true
tr -d '\r' <"$out/serial.log" >"$out/console.log"
say "qemu exited ($qrc)"
((qrc == 124 || qrc == 137)) && say "qemu ran past ${vm_timeout}s and was killed"

status=
[[ -r $share/status ]] && status=$(tr -dc '0-9' <"$share/status")
[[ -n $status ]] || status=$(sed -n 's/^GDRVM-STATUS: \([0-9]*\).*/\1/p' "$out/console.log" | tail -1)
if [[ -z $status ]] && grep -q 'BUG: soft lockup' "$out/console.log"; then
  # The kernel functions on the stuck CPUs' stacks (RIP and call trace lines).
  where=$(sed -n '/BUG: soft lockup/,$p' "$out/console.log" |
    sed -nE 's/.*(RIP: [0-9a-f]+:| )([a-z_][a-z0-9_.]*)\+0x[0-9a-f]+\/0x[0-9a-f]+.*/\2/p' |
    awk '!seen[$0]++' | head -12 | tr '\n' ' ')
  say "the guest kernel locked up: $(grep -m1 -o 'soft lockup - CPU#[0-9]* stuck for [0-9]*s! \[[^]]*\]' "$out/console.log"); stacks: ${where:-unreadable}"
  # Seen with Debian's 6.1 under emulation (2026-11-23): a supervisor's PERF_EVENT_IOC_DISABLE of
  # its observer flipped the syscall tracepoints' static keys; one vCPU sat in text_poke's int3,
  # the other at the patched site in syscall_trace_enter. tests/vm/run-tests.sh now holds those
  # tracepoints enabled for the whole stage, so no observer flips them.
  say "a soft lockup is a defect of guest kernel $kver, not of a program it runs; console: $out/console.log"
  exit 95
fi
if [[ -z $status ]]; then
  say "no status from the guest (panic, hang or timeout); console: $out/console.log, qemu: $out/qemu.log"
  tail -5 "$out/qemu.log" >&2 || true
  exit 98
fi
say "guest status $status; console $out/console.log, results $share/"
exit "$status"
