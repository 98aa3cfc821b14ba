#!/usr/bin/env bash
# The Soft-RoCE test stage, run inside the VM by scripts/rxe-vm.sh: creates rxe devices, runs
# rdma-core's and perftest's tools and our own verbs programs natively and under
# `gdrproxy run --mode enforce --policy configs/policy/default.json --trace-json ...`, checks that
# both behave the same and that the traces hold the decoded calls, moves a soft-RoCE rail with its
# RDMA device in exclusive RDMA netns mode and back (tests/vm/rdma_netns.sh), checks that a
# tenant's synthetic /sys fails reads the kernel refuses with the kernel's errno
# (tests/vm/sysfs_errno.sh), checks that a
# policy denying REG_MR stops ibv_rc_pingpong cleanly, attacks the sandbox boundary as a tenant
# granted rxe0 only (tests/vm/attacks.sh), checks the BPF LSM ioctl judge (tests/vm/lsm.sh), runs
# two containers (runc, then crun) under one agent with RoCE between them (tests/vm/containers.sh),
# runs gdr-harness on two simulated nodes with rxe rails, ib_write_bw between their containers
# (tests/vm/harness.sh), ib_write_bw between two Docker containers started through the runtime
# shim (tests/vm/docker.sh), ib_write_bw between two pods started through containerd's CRI plugin
# with the runtime handler gdrproxy (tests/vm/cri.sh), then runs the benchmark (tests/vm/bench.sh).
#
# The one idea: rxe0 on lo carries the raw-verbs tools (GID ::ffff:127.0.0.1); rdma_cm refuses
# 127/8, so rxe1 sits on a dummy netdev with 192.0.2.1 (the guest has no NIC, nothing leaves it);
# rxe2 on a second dummy netdev is the one whose port we take down to raise async events.
# Exit status: the number of failed checks.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/vm/lib.sh
. "$here/lib.sh"
: >"$summary"
t_start=$(now_ms)
cm_addr=192.0.2.1
# Keep the syscall entry/exit tracepoints enabled for the whole stage (events discarded: tracing
# off). Every `gdrproxy run` attaches its observer to syscalls:sys_enter_write/sys_exit_* and
# detaches it at exit; with nothing else holding them, each attach and detach flips their static
# keys, which patches kernel text while the other vCPU enters syscalls. Under emulation that
# livelocked Debian's 6.1 (both vCPUs in syscall_trace_enter and text_poke's int3, for minutes).
if [[ -d /sys/kernel/tracing/events/raw_syscalls ]]; then
  echo 0 >/sys/kernel/tracing/tracing_on
  echo 1 >/sys/kernel/tracing/events/raw_syscalls/sys_enter/enable
  echo 1 >/sys/kernel/tracing/events/raw_syscalls/sys_exit/enable
fi
log "guest kernel $(uname -r), $(nproc) vCPUs, repo $repo"

# ---- devices -----------------------------------------------------------------------------------
t0=$(now_ms)
setup_ok=1
ip link set lo up
for m in rdma_rxe ib_uverbs rdma_ucm dummy; do timeout 60 modprobe $m || { log "modprobe $m failed"; setup_ok=0; }; done
ip link add rxevm0 type dummy && ip addr add $cm_addr/32 dev rxevm0 && ip link set rxevm0 up || setup_ok=0
ip link add rxevm1 type dummy && ip link set rxevm1 up || setup_ok=0
timeout 30 rdma link add rxe0 type rxe netdev lo || setup_ok=0
timeout 30 rdma link add rxe1 type rxe netdev rxevm0 || setup_ok=0
timeout 30 rdma link add rxe2 type rxe netdev rxevm1 || setup_ok=0
for d in rxe0 rxe1 rxe2; do wait_port $d ACTIVE || { log "$d not ACTIVE"; setup_ok=0; }; done
# GID index of the RoCE v2 GID ::ffff:127.0.0.1 on rxe0 (the first 16 entries suffice: reading all
# 1024 sysfs entries takes a minute under emulation).
gidx=
for ((i = 0; i < 16; i++)); do
  g=$(cat /sys/class/infiniband/rxe0/ports/1/gids/$i 2>/dev/null)
  t=$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$i 2>/dev/null)
  if [[ $g == 0000:0000:0000:0000:0000:ffff:7f00:0001 && $t == "RoCE v2" ]]; then gidx=$i; break; fi
done
[[ -n $gidx ]] || { log "no RoCE v2 GID for 127.0.0.1 on rxe0"; setup_ok=0; gidx=1; }
rdma link show
if ((setup_ok)) && [[ -c /dev/infiniband/uverbs0 && -c /dev/infiniband/rdma_cm ]]; then
  record rxe-devices PASS $(($(now_ms) - t0)) "rxe0@lo gid $gidx, rxe1@rxevm0 $cm_addr, rxe2@rxevm1"
else
  record rxe-devices FAIL $(($(now_ms) - t0)) "see the console"
fi
if [[ ! -x $gdrproxy ]] || ! "$gdrproxy" run --help >/dev/null 2>&1; then
  log "$gdrproxy has no working 'run' subcommand: every proxied run will fail"
fi

# ---- exclusive RDMA netns mode: a rail's RDMA device moved with it and given back -------------
# First: the kernel changes the mode only while no other network namespace exists.
. "$here/rdma_netns.sh"

# ---- synthetic sysfs: reads the kernel refuses fail with its errno in the tenant's /sys -------
. "$here/sysfs_errno.sh"

# ---- raw verbs on rxe0 ----------------------------------------------------------------------------
V="-d rxe0 -g $gidx"
P="-d rxe0 -x $gidx -F"
lo=127.0.0.1
verbs_setup="QUERY_DEVICE GET_CONTEXT ALLOC_PD REG_MR CREATE_CQ CREATE_QP MODIFY_QP:RTS"

# -d rxe0: -v reads every GID table entry (1024 per rxe port), one trapped ioctl each; one device
# is enough and keeps the proxied run short under emulation.
sig='p'
check_one ibv_devinfo 0 "GET_CONTEXT QUERY_DEVICE QUERY_PORT QUERY_GID_ENTRY" ibv_devinfo -v -d rxe0

# Iteration counts are small: these are behaviour checks, the benchmark below measures.
sig='s/^([0-9]+ bytes) in .*/\1/p'
check_pair ibv_rc_pingpong 0 tcp:18515 "$verbs_setup" "ibv_rc_pingpong $V -n 200" "ibv_rc_pingpong $V -n 200 $lo"
# -e: completion channel; every ibv_req_notify_cq is a trapped INVOKE_WRITE, hence -n 100
check_pair ibv_rc_pingpong-e 0 tcp:18515 "$verbs_setup CREATE_COMP_CHANNEL REQ_NOTIFY_CQ" \
  "ibv_rc_pingpong -e $V -n 100" "ibv_rc_pingpong -e $V -n 100 $lo"
check_pair ibv_ud_pingpong 0 tcp:18515 "ALLOC_PD REG_MR CREATE_CQ CREATE_QP MODIFY_QP:RTS CREATE_AH" \
  "ibv_ud_pingpong $V -n 200 -s 1024" "ibv_ud_pingpong $V -n 200 -s 1024 $lo"
check_pair ibv_srq_pingpong 0 tcp:18515 "$verbs_setup CREATE_SRQ" \
  "ibv_srq_pingpong $V -n 100" "ibv_srq_pingpong $V -n 100 $lo"
# rxe in kernel 6.1 has no XRC and its provider no open_xrcd: libibverbs itself answers
# EOPNOTSUPP (95) without a kernel call, so both runs must fail alike after the calls before it.
sig='s/^(Couldn.t Open the XRC Domain.*)/\1/p'
check_pair ibv_xsrq_pingpong 1 none "GET_CONTEXT ALLOC_PD REG_MR" "ibv_xsrq_pingpong $V -n 100" \
  "ibv_xsrq_pingpong $V -n 100 $lo"

# Async event: the program blocks in ibv_get_async_event; its trigger takes rxevm1 down, rxe
# reports IBV_EVENT_PORT_ERR on rxe2 port 1. The trigger reconfigures a netdev of the guest
# (CAP_NET_ADMIN), a capability gdrproxy drops by default: this check keeps them.
port_up() { ip link set rxevm1 up && wait_port rxe2 ACTIVE; }
sig='s/^async_event: got ([a-z ]+ \(port [0-9]+\)).*/\1/p'
before=port_up PROXY_ARGS=--keep-caps check_one async_event 0 "GET_CONTEXT ASYNC_EVENT" \
  "$build/tests/vm/async_event" -d rxe2 -e PORT_ERR -- ip link set rxevm1 down
port_up || log "rxe2 did not come back ACTIVE"

# perftest's bandwidth servers are passive (their QP stops at RTR); everyone else reaches RTS.
# The latency values are not part of the signature; perftest prints "inf" for them when its clock
# calibration fails on a loaded emulated host, which says nothing about the tool's run.
perf_row='s/^ *([0-9]+) +([0-9]+) +([0-9.]+|inf) .*/\1 bytes x \2/p'
passive="QUERY_DEVICE GET_CONTEXT ALLOC_PD REG_MR CREATE_CQ CREATE_QP MODIFY_QP:RTR client:MODIFY_QP:RTS"
sig=$perf_row
check_pair ib_write_bw 0 tcp:18515 "$passive" "ib_write_bw $P -n 100" "ib_write_bw $P -n 100 $lo"
check_pair ib_read_bw 0 tcp:18515 "$passive" "ib_read_bw $P -n 100" "ib_read_bw $P -n 100 $lo"
check_pair ib_send_lat 0 tcp:18515 "$verbs_setup" "ib_send_lat $P -n 100" "ib_send_lat $P -n 100 $lo"
check_pair ib_write_lat 0 tcp:18515 "$verbs_setup" "ib_write_lat $P -n 100" "ib_write_lat $P -n 100 $lo"
check_pair ib_atomic_lat 0 tcp:18515 "$verbs_setup" "ib_atomic_lat $P -n 100" "ib_atomic_lat $P -n 100 $lo"

# ---- rdma_cm on rxe1 ------------------------------------------------------------------------------
# Readiness is the server's cm_id in LISTEN state (rdma resource show cm_id), so no fixed sleeps.
# rdma_cm commands are write()s on the caller's own fd: never trapped, observed at syscall exit
# and traced; the uverbs calls the connection drives are trapped and decoded as usual.
cm_calls="CREATE_ID client:RESOLVE_ADDR client:CONNECT server:LISTEN REG_MR CREATE_QP MODIFY_QP"
sig='s/^(server )?(ping data: rdma-ping-[0-9]+).*/\1\2/p'
check_pair rping 0 cm:7174 "$cm_calls" "rping -s -a $cm_addr -C 10 -v" "rping -c -a $cm_addr -C 10 -v -S 64"
sig='s/^(.*return status 0)$/\1/p'
check_pair ucmatose 0 cm:7471 "$cm_calls" "ucmatose -b $cm_addr -c 2 -C 10" "ucmatose -s $cm_addr -c 2 -C 10"
sig='s/^(rdma_(server|client): end 0)$/\1/p'
check_pair rdma_server-client 0 cm:7471 "$cm_calls" "rdma_server -s $cm_addr" "rdma_client -s $cm_addr"
sig=$perf_row
check_pair ib_send_bw-R 0 cm:18515 "$cm_calls" "ib_send_bw -d rxe1 -R -F -n 100" "ib_send_bw -d rxe1 -R -F -n 100 $cm_addr"

# ---- enforcement --------------------------------------------------------------------------------
. "$here/enforce.sh"

# ---- trap copies: real libibverbs calls judged from the copies made at their traps ------------
. "$here/trap_copy.sh"

# ---- attacks on the sandbox boundary with the real devices ----------------------------------------
. "$here/attacks.sh"
# Once more as on a kernel whose Landlock does not check device ioctls (Debian 12's 6.1 has ABI 2):
# gdrproxy then traps every open and refuses io_uring, ioctl-only opens and openat2.
if ((ll_abi >= 5)); then
  attack_landlock_abi=2 attack_tag=-abi2
  . "$here/attacks.sh"
  unset attack_landlock_abi attack_tag
fi

# ---- the BPF LSM ioctl judge (gdrproxy run --lsm) ---------------------------------------------
. "$here/lsm.sh"
# ---- the agent's BPF LSM judge, per container by its cgroup (gdrproxy agent --lsm) -----------
. "$here/agent_lsm.sh"

# ---- two runc containers, each with its own rail and rxe device, served by one agent ----------
. "$here/containers.sh"

# ---- gdr-harness prepare/run/teardown on two simulated nodes with rxe rails -------------------
. "$here/harness.sh"

# ---- two Docker containers (dockerd, containerd, the runtime shim) with RoCE between them ------
. "$here/docker.sh"

# ---- two pods through containerd's CRI plugin (handler gdrproxy), RoCE on their CNI eth0 -------
. "$here/cri.sh"

# ---- benchmark ----------------------------------------------------------------------------------
if [[ ${GDRVM_SKIP_BENCH:-0} != 1 ]]; then
  . "$here/bench.sh"
fi

# The kernel refuses write() commands (rxe doorbells, every rdma_cm command) on a uverbs or rdma_cm
# fd whose opener's credentials are not the writer's (ib_safe_file_access); it says so in the log.
# The message is printed once per kind (uverbs_write, ucma_write), not once per refusal.
refused=$(dmesg | grep 'changed security contexts after opening file descriptor')
if [[ -z $refused ]]; then
  record kernel-fd-credentials PASS 0 "no write() command refused for a foreign opener's fd"
else
  sed 's/^/    [dmesg] /' <<<"$refused"
  record kernel-fd-credentials FAIL 0 "kernel refused write() commands ($(grep -o '[a-z_]*_write' <<<"$refused" |
    sort -u | tr '\n' ' '| sed 's/ $//')): the fd's opener is not the writer (brokered open?)"
fi

log "================ summary ================"
sed 's/^/VMTEST: /' "$summary"
log "$passes passed, $failures failed in $((($(now_ms) - t_start) / 1000)) s"
cp "$work"/*.out "$work"/*.jsonl "$out/" 2>/dev/null
dmesg >"$out/dmesg.txt"
exit "$failures"
