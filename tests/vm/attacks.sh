# shellcheck shell=bash
# Attacks on the sandbox boundary with real rxe devices on the guest's kernel, sourced by
# tests/vm/run-tests.sh after the enforcement checks. tests/security runs the full suite on
# stand-in nodes on the build machine's kernel (and on lower Landlock ABIs); here the same
# mechanisms are attacked where a real driver answers, as a tenant granted only rxe0's uverbs node
# would, with what this kernel's Landlock ABI guarantees (docs/SECURITY.md, "Per kernel"):
#   ungranted-verbs: a context, a PD and an MR on rxe1 (verbs_ctrl_rate, ibv_devinfo) fail, with
#     gdrproxy's denial naming the node; the same program on the granted rxe0 runs;
#   ungranted-opens: rxe1's node opened read-only, read-write and ioctl-only (access mode 3), by
#     openat, io_uring (OPENAT and OPENAT2) and open_by_handle_at, root and unprivileged: every
#     one refused (Landlock, the broker, the refusal filter), except that from Landlock ABI 5 on
#     an io_uring ioctl-only open may succeed, but its fd must be useless: every ioctl refused by
#     the kernel, no read, no write;
#   no-device-nodes: a node with rxe1's (and rxe0's) device number made with mknod: refused;
#   supervisor-unkillable: the sandbox kills its parent: the pid namespace's init ignores it and
#     the supervisor keeps serving;
#   kernel-note: gdrproxy says at start what this kernel does not guarantee, and no more.
# The one idea: "used" is judged by the real driver's answer to a probe ioctl the filter never
# traps (TCGETS): ENOTTY means the ioctl reached ib_uverbs, EACCES or an error at open means not.

attack=$build/tests/security/attack_client
# The kernel's Landlock ABI (0: none), lowered like gdrproxy's to attack_landlock_abi when the
# sourcing script sets it (every run below then has `--landlock-abi attack_landlock_abi`).
ll_abi=$(python3 -c '
import ctypes, sys
v = ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1)  # landlock_create_ruleset, VERSION
print(max(v, 0) if not sys.argv[1] else min(max(v, 0), int(sys.argv[1])))' "${attack_landlock_abi:-}")
ll_opt=()
[[ -z ${attack_landlock_abi:-} ]] || ll_opt=(--landlock-abi "$attack_landlock_abi")
granted=$(uverbs_of rxe0)
other=$(uverbs_of rxe1)
# attack_run TAG CMD...: CMD under gdrproxy granted rxe0's node only; output in $work/TAG.out.
attack_run() {
  local tag=$1
  shift
  timeout -k 5 "$tool_timeout" "$gdrproxy" run "${ll_opt[@]}" --grant "$granted" "$@" >"$work/$tag.out" 2>&1
}
# attack_result NAME T0 PROBLEM...: one record; PROBLEMs empty means PASS.
attack_result() {
  local name=$1 t0=$2
  shift 2
  local -a p=()
  local x
  for x in "$@"; do [[ -n $x ]] && p+=("$x"); done
  if ((${#p[@]} == 0)); then
    record "$name${attack_tag:-}" PASS $(($(now_ms) - t0)) "$detail"
  else
    record "$name${attack_tag:-}" FAIL $(($(now_ms) - t0)) "$(IFS='; '; echo "${p[*]}")"
  fi
}
# line_of TAG PREFIX: the first line of $work/TAG.out that starts with PREFIX.
line_of() { grep -m1 -- "^$2" "$work/$1.out"; }

if [[ -z $granted || -z $other || ! -x $attack ]]; then
  record sandbox-attacks FAIL 0 "no uverbs node for rxe0/rxe1 ('$granted'/'$other') or no $attack"
else
  # ---- real verbs on the ungranted device ----
  t0=$(now_ms)
  attack_run attack-verbs-other -- "$build/tests/bench/verbs_ctrl_rate" -d rxe1 -t 0.2
  rc_other=$?
  attack_run attack-devinfo-other -- ibv_devinfo -d rxe1
  rc_devinfo=$?
  attack_run attack-verbs-granted -q -- "$build/tests/bench/verbs_ctrl_rate" -d rxe0 -t 0.2
  rc_granted=$?
  detail="rxe1 (${other}): verbs_ctrl_rate exit $rc_other, ibv_devinfo exit $rc_devinfo; rxe0 (${granted}): exit $rc_granted"
  attack_result ungranted-verbs "$t0" \
    "$( ((rc_other != 0 && rc_other != 124)) || echo "verbs_ctrl_rate on rxe1 exit $rc_other")" \
    "$( ((rc_devinfo != 0 && rc_devinfo != 124)) || echo "ibv_devinfo -d rxe1 exit $rc_devinfo")" \
    "$(grep -q "device $other is not granted" "$work/attack-verbs-other.out" || echo "no denial naming $other")" \
    "$( ((rc_granted == 0)) || echo "verbs_ctrl_rate on granted rxe0 exit $rc_granted")"

  # ---- every way to open the ungranted node ----
  t0=$(now_ms)
  n=/dev/infiniband/$other
  attack_run attack-opens -q -- sh -c "
    $attack open $n rdonly syscall | sed s/^/rdonly-/
    $attack open $n rdwr syscall | sed s/^/rdwr-/
    $attack open $n mode3 syscall | sed s/^/mode3-/
    $attack open $n mode3 io_uring
    $attack open $n mode3 io_uring2
    $attack open $n mode3 handle /dev/null
    setpriv --reuid 65534 --regid 65534 --clear-groups $attack open $n rdonly syscall | sed s/^/nobody-/"
  problems=()
  for want in "rdonly-open-syscall:EACCES" "rdwr-open-syscall:EACCES" "mode3-open-syscall:EACCES" \
    "open-handle:EPERM" "nobody-open-syscall:EACCES"; do
    l=$(line_of attack-opens "${want%%:*} ")
    [[ $l == *" ERR ${want#*:}" ]] || problems+=("${want%%:*}: '${l:-no line}', want ERR ${want#*:}")
  done
  # io_uring: refused below Landlock ABI 5; from 5 on the kernel makes an ioctl-only fd useless.
  useless="OK ioctl=EACCES read=EBADF write=EBADF"
  while read -r l; do
    if ((ll_abi < 5)); then
      [[ $l == *" ERR ENOSYS" ]] || problems+=("io_uring (Landlock ABI $ll_abi): '$l', want ERR ENOSYS")
    else
      [[ $l == *" ERR "* || $l == *" $useless" ]] || problems+=("io_uring (Landlock ABI $ll_abi): '$l', want an error or '$useless'")
    fi
  done < <(grep '^open-io_uring' "$work/attack-opens.out")
  (($(grep -c '^open-io_uring' "$work/attack-opens.out") == 2)) || problems+=("not 2 io_uring lines")
  # Nothing else may have reached the driver: a usable fd would print OK with an ioctl that ran.
  grep ' OK ' "$work/attack-opens.out" | grep -vqE "^open-io_uring2? $useless" && problems+=("an open of $n gave a usable fd")
  detail="Landlock ABI $ll_abi: $(grep -c ' ERR ' "$work/attack-opens.out") opens of $n refused, $(grep -c " $useless" "$work/attack-opens.out") io_uring fd(s) useless"
  attack_result ungranted-opens "$t0" "${problems[@]}"

  # ---- device nodes made in the sandbox ----
  t0=$(now_ms)
  attack_run attack-mknod -q -- sh -c "
    $attack mknod $work/attack-u1 $n
    $attack mknod $work/attack-u0 /dev/infiniband/$granted"
  made=$(grep -c '^mknod ERR E\(ACCES\|PERM\)$' "$work/attack-mknod.out")
  detail="$made of 2 mknods refused"
  attack_result no-device-nodes "$t0" "$( ((made == 2)) || echo "a node was made: $(tr '\n' ' ' <"$work/attack-mknod.out")")" \
    "$([[ -e $work/attack-u1 ]] && echo "$work/attack-u1 exists")"
  rm -f "$work/attack-u1" "$work/attack-u0"

  # ---- the supervisor cannot be killed from inside ----
  t0=$(now_ms)
  attack_run attack-kill -q -- "$attack" kill-parent
  l=$(line_of attack-kill kill-parent)
  detail=$l
  attack_result supervisor-unkillable "$t0" "$([[ $l == *"serving=OK" ]] || echo "'${l:-no line}'")"

  # ---- what this kernel does not guarantee is said ----
  t0=$(now_ms)
  attack_run attack-note -- true
  l=$(grep -m1 'sandbox:' "$work/attack-note.out")
  detail=${l:0:90}
  if ((ll_abi < 5)); then
    attack_result kernel-note "$t0" "$([[ $l == *"does not check device ioctls"* ]] || echo "no start-up note on the missing IOCTL_DEV (Landlock ABI $ll_abi): '${l:-none}'")"
  else
    detail="Landlock ABI $ll_abi: ${l:-no shortfall said}"
    attack_result kernel-note "$t0" "$([[ $l != *"does not check device ioctls"* ]] || echo "a note on a missing IOCTL_DEV under Landlock ABI $ll_abi: '$l'")"
  fi
fi
