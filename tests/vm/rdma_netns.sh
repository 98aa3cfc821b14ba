# shellcheck shell=bash
# shellcheck disable=SC2154 # work, gdrproxy, testkit: set by lib.sh
# Exclusive RDMA netns mode (`rdma system set netns exclusive`, what rdma-cni clusters run) with a
# real soft-RoCE rail, sourced by tests/vm/run-tests.sh (it needs the helpers of lib.sh) before
# any other check makes a network namespace: the kernel changes the mode only while no namespace
# but the initial one exists.
# What it shows, in seconds: `netns select` and `doctor` say the mode in both modes; in exclusive
# mode `netns move` of a veth rail carrying rxe device rnrxe leaves the rail and its RDMA device
# in the target, seen there (rdma netlink, libibverbs through the target's own sysfs) and not on
# the host, or, when the kernel refuses to move the device (a kernel without rxe's
# disassociate_ucontext; and, forced, a target that already holds a device of its name), fails in
# one line naming device, rail and the kernel's reason with nothing left moved; `netns restore`
# gives both back (the rail's addresses and routes read back as before, the device on it on the
# host, none in the target); the same after a move killed right after the device was placed; the
# rail hook (`gdrproxy hook create-runtime`) finds the rail's RoCE v2 GID as the container's
# namespace sees it and poststop gives everything back. The mode is set back to shared at the
# end, whatever happened. Addresses: 198.51.100.0/24 only; every wait is bounded.

rn_t0=$(now_ms)
rn_problems=()
rn_work=$work/rdmans
rm -rf "$rn_work"
mkdir -p "$rn_work"
rn_ns=/run/netns/rnT
rn_note() { log "rdma-netns: $*"; }
rn_fail() { rn_problems+=("$*"); rn_note "PROBLEM: $*"; }

# The mode as iproute2's rdma tool reads it (RDMA_NLDEV_CMD_SYS_GET).
rn_mode() { rdma system show 2>/dev/null | sed -n 's/.*netns \([a-z]*\).*/\1/p'; }
# rn_set_mode MODE: the kernel answers EBUSY while a namespace other than the initial one exists,
# and a deleted one lingers until its cleanup work has run: retried for up to 30 s.
rn_set_mode() {
  local i
  for ((i = 0; i < 150; i++)); do
    rdma system set netns "$1" 2>/dev/null && [[ $(rn_mode) == "$1" ]] && return 0
    sleep 0.2
  done
  return 1
}
# rn_reports MODE: select --json and doctor --json say MODE.
rn_reports() {
  local sel doc
  sel=$("$gdrproxy" netns select --json --include rnh0 2>"$rn_work/select.err" | jq -r '.rdma_netns_mode // "null"')
  [[ $sel == "$1" ]] || rn_fail "netns select says RDMA netns mode '$sel', not $1 ($(head -c 300 "$rn_work/select.err"))"
  doc=$("$gdrproxy" doctor --only rdma --json 2>/dev/null | jq -r '.facts.rdma_netns_mode // "null"')
  [[ $doc == "$1" ]] || rn_fail "doctor says rdma_netns_mode '$doc', not $1"
  "$gdrproxy" netns select --include rnh0 2>&1 >/dev/null | grep -q "RDMA netns mode: $1" ||
    rn_fail "netns select's notes do not say 'RDMA netns mode: $1'"
}
# The host's view of the rail, compared before and after: link flags and MTU, IPv4 addresses and
# routes (every table), and its RDMA device's netdev. (IPv6 link-local addresses are left out:
# their DAD flags change by themselves for a while after the link comes up.)
rn_host_state() {
  ip -o link show rnh0 2>&1 | awk '{print $3, $4, $5}'
  ip -o -4 addr show dev rnh0 2>&1 | awk '{$1=""; print}'
  ip -4 route show table all dev rnh0 2>&1
  rdma link show rnrxe/1 2>&1 | sed 's/^link //; s/ state .*netdev / netdev /'
}
# rn_in_target: rnrxe is on rnh0 in the target only: the target's RDMA netlink has it on rnh0,
# libibverbs there (ip netns exec mounts the target's own sysfs) lists it, the host has neither.
rn_in_target() {
  ip netns exec rnT rdma link show rnrxe/1 2>/dev/null | grep -q 'netdev rnh0' ||
    { rn_fail "$1: the target's RDMA netlink has no rnrxe on rnh0"; return 1; }
  rdma dev show rnrxe >/dev/null 2>&1 && { rn_fail "$1: the host still sees rnrxe"; return 1; }
  ip netns exec rnT ibv_devices 2>/dev/null | grep -qw rnrxe ||
    { rn_fail "$1: libibverbs in the target does not list rnrxe"; return 1; }
  return 0
}
# rn_given_back WHAT [DEVICE]: the host reads back as before the move, and the target has no RDMA
# device (but DEVICE, when named).
rn_given_back() {
  local i
  # The device is made again from the restore; its port may take a moment to show its netdev.
  for ((i = 0; i < 50; i++)); do
    rn_host_state >"$rn_work/after.txt"
    cmp -s "$rn_work/before.txt" "$rn_work/after.txt" && break
    sleep 0.1
  done
  cmp -s "$rn_work/before.txt" "$rn_work/after.txt" ||
    rn_fail "$1: the host differs from before: $(diff "$rn_work/before.txt" "$rn_work/after.txt" | tr '\n' ' ')"
  local left
  left=$(ip netns exec rnT rdma -j dev show 2>/dev/null | jq -r '.[].ifname' | sort | tr '\n' ' ')
  [[ $left == "${2:+$2 }" ]] || rn_fail "$1: the target has RDMA devices '$left', not '${2:-}'"
  ip -n rnT link show rnh0 >/dev/null 2>&1 && rn_fail "$1: rnh0 is still in the target"
}

rn_start=$(rn_mode)
rn_note "guest kernel $(uname -r); RDMA netns mode at start: ${rn_start:-unknown}; rxe disassociate_ucontext: $(grep -c ' rxe_disassociate_ucontext' /proc/kallsyms)"
[[ $rn_start == shared ]] || rn_fail "the stage starts in RDMA netns mode '${rn_start}', not shared"
if ! { ip link add rnh0 type veth peer name rnp0 && ip addr add 198.51.100.1/24 dev rnh0 &&
  ip link set rnh0 up && ip link set rnp0 up; }; then
  rn_fail "cannot make the veth rail rnh0"
fi
timeout 30 rdma link add rnrxe type rxe netdev rnh0 || rn_fail "cannot make rnrxe on rnh0"
wait_port rnrxe ACTIVE || rn_fail "rnrxe not ACTIVE"

# ---- shared mode: reported --------------------------------------------------------------------
rn_reports shared

# ---- exclusive mode ----------------------------------------------------------------------------
rn_exclusive=0
if rn_set_mode exclusive; then
  rn_exclusive=1
else
  rn_fail "cannot switch to exclusive mode in 30 s (network namespaces: $(lsns -t net -n -o NS,PID,COMMAND 2>/dev/null | tr '\n' ';'))"
fi
rn_moved=none
if ((rn_exclusive)); then
  rn_reports exclusive
  timeout 20 ip netns add rnT || rn_fail "cannot make namespace rnT"
  rn_host_state >"$rn_work/before.txt"

  # The move: the device goes with its rail, or the kernel refuses and nothing is left moved.
  GDRPROXY_NETNS_TRACE_STEPS=1 timeout 60 "$testkit" netns move --netns "$rn_ns" --ifaces rnh0 \
    --arp-profile none --journal "$rn_work/j.json" 2>"$rn_work/move.err"
  rc=$?
  sed 's/^/    [move] /' "$rn_work/move.err"
  if ((rc == 0)); then
    rn_moved=moved
    rn_in_target "move"
    jq -e '.rdma_netns_mode == "exclusive" and .ifaces[0].soft_roce == ["rnrxe"]' "$rn_work/j.json" >/dev/null ||
      rn_fail "the journal does not record exclusive mode and rnrxe"
    grep -q 'rnh0: soft-RoCE device rnrxe moved into' "$rn_work/move.err" ||
      rn_fail "move did not say it moved rnrxe into the target"
    timeout 60 "$gdrproxy" netns restore --journal "$rn_work/j.json" 2>"$rn_work/restore.err" ||
      rn_fail "restore failed: $(tr '\n' ' ' <"$rn_work/restore.err")"
    [[ -f $rn_work/j.json.done ]] || rn_fail "restore left no j.json.done"
    rn_given_back "restore"
  else
    rn_moved=refused
    # One line, naming the device, the rail and the kernel's reason; the host as before.
    errline=$(grep '^gdrproxy netns: ' "$rn_work/move.err")
    [[ $(grep -c '^gdrproxy netns: ' "$rn_work/move.err") == 1 && $errline == *rnrxe* &&
      $errline == *rnh0* && $errline == *"the kernel refused"* && $errline == *"rolled back"* ]] ||
      rn_fail "a refused move did not end in one line naming rnrxe, rnh0 and the kernel's reason: $errline"
    [[ -e $rn_work/j.json ]] && rn_fail "a refused move left its journal"
    rn_given_back "refused move"
  fi

  # A move the kernel refuses half way: the target already holds a device named rnrxe (a decoy,
  # made on another netdev and renamed there: names are unique per namespace in exclusive mode),
  # so moving the rail's rnrxe in fails after the rail moved. One line, everything rolled back.
  rn_refusal=not-run
  if [[ $rn_moved == moved ]]; then
    if ip link add rnd0 type dummy && ip link set rnd0 up &&
      timeout 30 rdma link add rndecoy type rxe netdev rnd0 &&
      rdma dev set rndecoy netns rnT && ip netns exec rnT rdma dev set rndecoy name rnrxe; then
      timeout 60 "$gdrproxy" netns move --netns "$rn_ns" --ifaces rnh0 --arp-profile none \
        --journal "$rn_work/r.json" 2>"$rn_work/refused.err"
      rc=$?
      sed 's/^/    [refused] /' "$rn_work/refused.err"
      errline=$(grep '^gdrproxy netns: ' "$rn_work/refused.err")
      if ((rc == 0)); then
        rn_fail "the move went through although the target holds another rnrxe"
      elif [[ $(grep -c '^gdrproxy netns: ' "$rn_work/refused.err") == 1 && $errline == *rnrxe* &&
        $errline == *rnh0* && $errline == *"the kernel refused"* && $errline == *"rolled back"* ]]; then
        rn_refusal=refused
      else
        rn_fail "a refused move did not end in one line naming rnrxe, rnh0, the kernel's reason and the rollback: $errline"
      fi
      [[ -e $rn_work/r.json ]] && rn_fail "a refused move left its journal"
      rn_given_back "refused move" rnrxe
    else
      rn_note "cannot place a decoy rnrxe in the target (this kernel's RDMA device names are unique system-wide?): refusal not tried"
      rn_refusal=no-decoy
    fi
    ip link del rnd0 2>/dev/null
    for ((i = 0; i < 50; i++)); do
      [[ -z $(ip netns exec rnT rdma dev show 2>/dev/null) ]] && break
      sleep 0.1
    done
  fi

  # A move killed right after the device was placed, then restore from the journal alone.
  if [[ $rn_moved == moved ]]; then
    step=$(sed -n 's/^step \([0-9]*\): rnh0: soft-RoCE device rnrxe .*/\1/p' "$rn_work/move.err" | head -1)
    if [[ -z $step ]]; then
      rn_fail "no traced step for the soft-RoCE device"
    else
      GDRPROXY_NETNS_FAULT_AFTER=$step timeout 60 "$testkit" netns move --netns "$rn_ns" \
        --ifaces rnh0 --arp-profile none --journal "$rn_work/k.json" 2>"$rn_work/killed.err"
      rc=$?
      ((rc == 86)) || rn_fail "the move with a fault after step $step exited $rc, not 86"
      rn_in_target "killed move"
      timeout 60 "$gdrproxy" netns restore --journal "$rn_work/k.json" 2>"$rn_work/restore2.err" ||
        rn_fail "restore after the killed move failed: $(tr '\n' ' ' <"$rn_work/restore2.err")"
      rn_given_back "restore after a killed move"
    fi

    # The rail hook: create-runtime finds the rail's RoCE v2 GID as the container sees it.
    unshare --net sleep 120 &
    rn_ctr=$!
    for ((i = 0; i < 50; i++)); do
      [[ $(readlink /proc/$rn_ctr/ns/net) != "$(readlink /proc/self/ns/net)" ]] && break
      sleep 0.1
    done
    printf '{"ociVersion":"1.0.2","id":"rnvm","status":"creating","pid":%d}' "$rn_ctr" |
      timeout 60 "$gdrproxy" hook create-runtime --rails rnh0 --profile none \
        --state-dir "$rn_work/hooks" 2>"$rn_work/hook.err"
    rc=$?
    sed 's/^/    [hook] /' "$rn_work/hook.err"
    if ((rc == 0)); then
      nsenter --net=/proc/$rn_ctr/ns/net rdma link show rnrxe/1 2>/dev/null | grep -q 'netdev rnh0' ||
        rn_fail "hook: the container's namespace has no rnrxe on rnh0"
    else
      rn_fail "hook create-runtime failed ($rc): $(tr '\n' ' ' <"$rn_work/hook.err")"
    fi
    timeout 60 "$gdrproxy" hook poststop --id rnvm --state-dir "$rn_work/hooks" 2>"$rn_work/post.err" ||
      rn_fail "hook poststop failed: $(tr '\n' ' ' <"$rn_work/post.err")"
    [[ -z $(nsenter --net=/proc/$rn_ctr/ns/net rdma dev show 2>/dev/null) ]] ||
      rn_fail "hook poststop left an RDMA device in the container's namespace"
    kill "$rn_ctr" 2>/dev/null
    wait "$rn_ctr" 2>/dev/null
    rn_given_back "hook poststop"
  fi
fi

# ---- cleanup: the rail, the namespace, shared mode again --------------------------------------
ip netns del rnT 2>/dev/null
ip link del rnh0 2>/dev/null
if [[ $(rn_mode) != shared ]]; then
  rn_set_mode shared || rn_fail "cannot set RDMA netns mode back to shared: the rest of the stage runs in $(rn_mode) mode"
fi
rn_reports_shared_again=$(rn_mode)
[[ $rn_reports_shared_again == shared ]] || rn_fail "RDMA netns mode is '$rn_reports_shared_again' at the end"

if [[ $rn_moved == moved ]]; then
  rn_what="rnrxe moved with rail rnh0 into the target and given back exactly by restore, after a killed move, and by the rail hooks"
  if [[ $rn_refusal == refused ]]; then
    rn_what+="; a move the kernel refused (a decoy rnrxe in the target) failed in one line, rolled back"
  else
    rn_what+="; the refusal case was not run ($rn_refusal)"
  fi
else
  rn_what="the kernel refused to move rnrxe with rail rnh0: one line, rolled back, the host as before (the killed move and the hooks need a device that moves: not run)"
fi
if ((${#rn_problems[@]} == 0)); then
  record rdma-netns-exclusive PASS $(($(now_ms) - rn_t0)) "select/doctor say shared and exclusive; $rn_what"
else
  record rdma-netns-exclusive FAIL $(($(now_ms) - rn_t0)) "${rn_problems[*]}"
fi
