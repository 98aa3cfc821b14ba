# shellcheck shell=bash disable=SC2154 # build, work, gdrproxy, testkit, tool_timeout: set by tests/vm/lib.sh
# The BPF LSM ioctl judge (`gdrproxy run --lsm`), sourced by tests/vm/run-tests.sh. The build
# machine's kernel refuses BPF LSM programs to every process; this guest boots with lsm=...,bpf
# (scripts/rxe-vm.sh), so here the judge runs for real. NVIDIA nodes are stand-ins (`gdrproxy-testkit
# standin`: real char devices with borrowed names, nvidia0 = /dev/urandom, nvidia1 = /dev/kmsg),
# the tenant is granted nvidiactl, nvidia-uvm and nvidia0 but not nvidia1:
#   lsm-untrapped: with the judge, RM_FREE and UVM_INITIALIZE run untrapped although a GPU is not
#     granted (without it they trap: 3 notifications against 2), counted as allowed in the kernel;
#     UVM_INITIALIZE on the granted nvidia0 (not nvidia-uvm) is refused and said;
#   lsm-ungranted-fd: an fd of nvidia1 inherited from outside the sandbox: RM_FREE (untrapped) and
#     TCGETS (never trapped) on it are refused in the kernel (EPERM), from the process, a thread
#     and a forked child, each said in one line naming /dev/nvidia1, the request and the caller
#     (and traced under --trace-json); without the judge TCGETS reaches the driver;
#   lsm-others-unjudged: while a judged sandbox runs, the same ioctl on the same device number
#     from a process outside it is not refused;
#   lsm-start: `--lsm on` starts here (BPF LSM active), names the judge in --stats.
# The one idea: "refused by the judge" is EPERM on a call the supervisor never saw, checked
# against the same call without --lsm, where it reaches the driver.

lsm_t0=$(now_ms)
attack=$build/tests/security/attack_client
rm_free=0xc0104629  # _IOWR('F', 0x29, NVOS00): an escape the default policy allows unconditionally
tcgets=0x5401
uvm_initialize=0x30000001  # untrapped under the default policy, allowed on nvidia-uvm only
nv_grant=nvidiactl,nvidia-uvm,nvidia0
# The stand-in nvidia-uvm borrows /dev/loop-control, which the guest has once loop is loaded.
[[ -c /dev/loop-control ]] || timeout 30 modprobe loop
mountpoint -q /sys/kernel/security || mount -t securityfs securityfs /sys/kernel/security
lsms=$(cat /sys/kernel/security/lsm 2>/dev/null)
# lsm_run TAG RUN-OPTIONS... -- CMD...: under stand-in nodes and gdrproxy run, fd 7 holding nvidia1
# opened outside the sandbox; output in $work/TAG.out.
# LSM_FD_NODE=nvidia0 makes fd 7 that node instead.
# shellcheck disable=SC2016 # $0 and $@ are the inner bash's
lsm_run() {
  local tag=$1
  shift
  timeout -k 5 "$tool_timeout" "$testkit" standin bash -c 'exec 7<>"/dev/$0" && exec "$@"' \
    "${LSM_FD_NODE:-nvidia1}" "$gdrproxy" run "$@" >"$work/$tag.out" 2>&1
}
if [[ ,$lsms, != *,bpf,* ]]; then
  record lsm-judge FAIL 0 "the BPF LSM is not active in the guest (lsm: '$lsms'): the VM's kernel command line lacks lsm=...,bpf"
else
  # ---- untrapped requests with a GPU not granted ----
  t0=$(now_ms)
  nv=("$testkit" exercise nvidia /dev/nvidiactl /dev/nvidia-uvm)
  lsm_run lsm-untrapped --lsm on --stats --grant "$nv_grant" -- "${nv[@]}"
  rc_on=$?
  lsm_run lsm-untrapped-off --stats --grant "$nv_grant" -- "${nv[@]}"
  p=()
  ((rc_on == 0)) || p+=("--lsm on exit $rc_on")
  grep -q "notifications: 2 ioctl," "$work/lsm-untrapped.out" || p+=("with the judge RM_FREE/UVM_INITIALIZE trapped")
  grep -q "judged in the kernel (BPF LSM): 2 untrapped call(s) allowed" "$work/lsm-untrapped.out" || p+=("judge did not count 2 allowed calls")
  grep -q "RM_FREE -> EPERM" "$work/lsm-untrapped.out" && p+=("RM_FREE refused on granted nvidiactl")
  grep -q "notifications: 3 ioctl," "$work/lsm-untrapped-off.out" || p+=("without the judge RM_FREE did not trap")
  # An untrapped UVM request on a granted GPU node (not nvidia-uvm): refused, and said why.
  LSM_FD_NODE=nvidia0 lsm_run lsm-not-here --lsm on --grant "$nv_grant" -- "$attack" fdioctl 7 $uvm_initialize
  grep -q "^fdioctl ERR EPERM" "$work/lsm-not-here.out" || p+=("UVM_INITIALIZE on granted nvidia0 not refused: $(head -c 200 "$work/lsm-not-here.out")")
  grep -q "denied IOCTL_0x30000001 on /dev/nvidia0 .* in the kernel (BPF LSM): the request runs untrapped only on the granted devices the policy allows it on, not on nvidia0 -> EPERM" \
    "$work/lsm-not-here.out" || p+=("UVM_INITIALIZE refusal on nvidia0 not said")
  if ((${#p[@]} == 0)); then
    record lsm-untrapped PASS $(($(now_ms) - t0)) "2 trapped ioctls with the judge, 3 without; 2 allowed in the kernel; UVM_INITIALIZE refused on nvidia0"
  else
    show "$work/lsm-untrapped.out" lsm
    record lsm-untrapped FAIL $(($(now_ms) - t0)) "$(IFS='; '; echo "${p[*]}")"
  fi

  # ---- an inherited fd of the ungranted GPU ----
  t0=$(now_ms)
  p=()
  for from in "" thread fork; do
    lsm_run "lsm-fd-free$from" --lsm on --grant "$nv_grant" -- "$attack" fdioctl 7 $rm_free $from
    grep -q "^fdioctl ERR EPERM" "$work/lsm-fd-free$from.out" || p+=("RM_FREE on nvidia1 ${from:-process}: $(head -c 200 "$work/lsm-fd-free$from.out")")
    lsm_run "lsm-fd-tcgets$from" --lsm on --grant "$nv_grant" -- "$attack" fdioctl 7 $tcgets $from
    grep -q "^fdioctl ERR EPERM" "$work/lsm-fd-tcgets$from.out" || p+=("TCGETS on nvidia1 ${from:-process}: $(head -c 200 "$work/lsm-fd-tcgets$from.out")")
    # The refusal, made in the kernel, is still said: the device, the request and the caller.
    said="denied IOCTL_0x00005401 on /dev/nvidia1 by pid [1-9][0-9]* (ns pid [1-9][0-9]*, attack_client) in the kernel (BPF LSM): device nvidia1 is not granted -> EPERM"
    grep -q "$said" "$work/lsm-fd-tcgets$from.out" || p+=("TCGETS refusal ${from:-process} not said: $(grep -v '^fdioctl' "$work/lsm-fd-tcgets$from.out" | head -c 300)")
  done
  grep -q "denied IOCTL_0xc0104629 on /dev/nvidia1 .* in the kernel (BPF LSM)" "$work/lsm-fd-free.out" || p+=("RM_FREE refusal not said")
  # Traced too (trace mode: the judge still refuses an ungranted device); one line per kind.
  lsm_run lsm-fd-trace --lsm on --mode trace --trace-json "$work/lsm-fd-trace.jsonl" --grant "$nv_grant" -- \
    "$attack" fdioctl 7 $tcgets thread
  jq -e -s 'any(.[]; .device == "nvidia1" and .decision == "deny" and (.note // "" | test("BPF LSM")))' \
    "$work/lsm-fd-trace.jsonl" >/dev/null 2>&1 || p+=("no trace record of the kernel's refusal in $work/lsm-fd-trace.jsonl")
  # The judge's refusals are said at exit.
  grep -q "ioctl(s) refused" "$work/lsm-fd-free.out" || p+=("no refusal count at exit")
  # Without the judge TCGETS on the inherited fd reaches the driver (Landlock checks ioctls only on
  # files opened inside its domain): what the judge adds.
  lsm_run lsm-fd-tcgets-off --grant "$nv_grant" -- "$attack" fdioctl 7 $tcgets
  grep -q "^fdioctl ERR EPERM" "$work/lsm-fd-tcgets-off.out" && p+=("TCGETS refused without the judge: the control does not show the judge's effect")
  if ((${#p[@]} == 0)); then
    record lsm-ungranted-fd PASS $(($(now_ms) - t0)) "RM_FREE and TCGETS on an inherited nvidia1 fd refused (process, thread, fork); TCGETS reaches the driver without --lsm"
  else
    record lsm-ungranted-fd FAIL $(($(now_ms) - t0)) "$(IFS='; '; echo "${p[*]}")"
  fi

  # ---- tasks outside the sandbox are not judged ----
  t0=$(now_ms)
  lsm_run lsm-hold --lsm on --grant "$nv_grant" -- sleep 3 &
  hold=$!
  sleep 1
  # /dev/kmsg carries the stand-in nvidia1's device number.
  outside=$(bash -c "exec 7<>/dev/kmsg && '$attack' fdioctl 7 $tcgets" 2>&1)
  wait "$hold"
  hold_rc=$?
  if [[ $outside != "fdioctl ERR EPERM"* && $hold_rc == 0 ]]; then
    record lsm-others-unjudged PASS $(($(now_ms) - t0)) "outside the judged sandbox: $outside"
  else
    record lsm-others-unjudged FAIL $(($(now_ms) - t0)) "outside: '$outside', sandbox exit $hold_rc"
  fi
fi
log "BPF LSM checks took $((($(now_ms) - lsm_t0) / 1000)) s"
