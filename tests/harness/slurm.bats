#!/usr/bin/env bats
# The Slurm plugin (harness/slurm/gdr_spank.so) under a real Slurm on two simulated nodes: Debian's
# munged and slurmctld in the fabric namespace (192.0.2.1, host name ctl), one slurmd per node in
# that node's network and UTS namespaces (its own NodeName, spool and log). `srun -N2 --gdr=auto`
# runs a real Open MPI ping-pong (PMIx, TCP over rail0) whose ranks see only their node's rails;
# each node reads back byte for byte after the job, and after a job cancelled by scancel.
# The idea not to miss: slurmd, slurmstepd, the plugin's root callbacks and the harness all run
# inside each node's namespaces, exactly as they would on a node; nothing here is a stand-in but
# the nodes themselves (namespaces of this machine) and their rails (veths, no RDMA device).
# Usage: GDRPROXY=build/gdrproxy GDR_SPANK=build/harness/slurm/gdr_spank.so bats tests/harness/slurm.bats

setup_file() {
  export GH_ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
  export HARNESS="$GH_ROOT/harness/gdr-harness"
  export GDRPROXY="$(realpath "${GDRPROXY:-$GH_ROOT/build/gdrproxy}")"
  export GDR_SPANK="$(realpath "${GDR_SPANK:-$GH_ROOT/build/harness/slurm/gdr_spank.so}")"
  export GH_P="gs$$"
  export GH_W="$BATS_FILE_TMPDIR/w"
  mkdir -p "$GH_W"
  local need
  for need in slurmctld slurmd srun scancel sinfo munged mpicc; do
    command -v "$need" >/dev/null || { echo "$need is not installed (scripts/setup.sh installs it)" >&2; return 1; }
  done
  [[ -f $GDR_SPANK ]] || { echo "no plugin at $GDR_SPANK (libslurm-dev missing at build time?)" >&2; return 1; }
  build_topology || { cleanup_all; return 1; }
  start_cluster || { dump_logs; stop_cluster; cleanup_all; return 1; }
}

teardown_file() {
  stop_cluster
  cleanup_all
}

teardown() {
  local n
  for n in A B; do timeout 60 bash -c 'on_node "$1" teardown' _ "$n" >/dev/null 2>&1 || true; done
}

load lib

# ---------------------------------------------------------------------------------------------
# the cluster

in_fabric() { nsenter --net="$(ns F)" -- "$@"; }

start_cluster() {
  local s=$GH_W/slurm m=$GH_W/munge n
  mkdir -p "$s/ctld" "$m" "$s/tmp-${GH_P}-nodeA" "$s/tmp-${GH_P}-nodeB"
  chmod 700 "$m"
  ip -n "${GH_P}F" addr add 192.0.2.1/24 dev br1 || return 1
  # munge: a key of our own, its socket in the work directory (every namespace sees the file).
  dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 status=none && chmod 400 "$m/munge.key"
  munged --force --key-file "$m/munge.key" --socket "$m/munge.sock" --pid-file "$m/munged.pid" \
    --log-file "$m/munged.log" --seed-file "$m/munged.seed" || return 1
  # optional, not required: Slurm then ignores the plugin's failed callbacks, so the refusals
  # below show that the plugin itself keeps a refused step's tasks from running.
  cat >"$s/plugstack.conf" <<EOF
optional $GDR_SPANK harness=$HARNESS gdrproxy=$GDRPROXY env=RDMA_IFACES=rail0,rail1 env=GDR_HARNESS_ARP_PROFILE=multirail
EOF
  cat >"$s/slurm.conf" <<EOF
ClusterName=gdrtest
SlurmctldHost=ctl(192.0.2.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$m/munge.sock
CredType=cred/munge
SlurmctldPort=16817
SlurmdPort=16818
StateSaveLocation=$s/ctld
SlurmdSpoolDir=$s/spool-%n
TmpFS=$s/tmp-%n
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/slurmd-%n.pid
SlurmctldLogFile=$s/slurmctld.log
SlurmdLogFile=$s/slurmd-%n.log
SlurmdDebug=debug
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/linear
ReturnToService=2
PlugStackConfig=$s/plugstack.conf
NodeName=${GH_P}-nodeA NodeAddr=192.0.2.10 CPUs=1 State=UNKNOWN
NodeName=${GH_P}-nodeB NodeAddr=192.0.2.20 CPUs=1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF=$s/slurm.conf
  in_fabric unshare --uts -- bash -c 'hostname ctl && exec slurmctld -f "$1" -i' _ "$SLURM_CONF" || return 1
  for n in A B; do
    nsenter --net="$(ns "$n")" -- unshare --uts -- bash -c 'hostname "$1" && exec slurmd -f "$2" -N "$1"' \
      _ "${GH_P}-node$n" "$SLURM_CONF" || return 1
  done
  # Both nodes idle within 60 s.
  local i
  for ((i = 0; i < 120; i++)); do
    [[ $(in_fabric sinfo -h -N -o '%N %t' 2>/dev/null | grep -c ' idle$') -eq 2 ]] && return 0
    sleep 0.5
  done
  in_fabric sinfo -N 2>&1
  return 1
}

stop_cluster() {
  local f
  for f in "$GH_W"/slurm/slurmd-*.pid "$GH_W/slurm/slurmctld.pid" "$GH_W/munge/munged.pid"; do
    [[ -f $f ]] && kill -TERM "$(cat "$f")" 2>/dev/null
  done
  sleep 1
  for f in "$GH_W"/slurm/slurmd-*.pid "$GH_W/slurm/slurmctld.pid" "$GH_W/munge/munged.pid"; do
    [[ -f $f ]] && kill -KILL "$(cat "$f")" 2>/dev/null
  done
  return 0
}

dump_logs() {
  local f
  for f in "$GH_W"/slurm/*.log "$GH_W"/munge/munged.log; do
    [[ -f $f ]] && { echo "== $f"; grep -vE "debug[0-9]?:" "$f" | tail -n 25; }
  done
}

# wait_gone PATH: PATH disappears within 20 s (slurmstepd runs the plugin's exit callback, and so
# the detach, after srun has returned).
wait_gone() {
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -e $1 ]] || return 0
    sleep 0.2
  done
  echo "$1 still there after 20 s" >&2
  dump_logs
  return 1
}

# srun_fabric ARGS...: srun from the fabric namespace (where slurmctld is reachable and the nodes
# reach srun back), bounded.
srun_fabric() { in_fabric timeout 120 srun "$@"; }

# ---------------------------------------------------------------------------------------------

@test "srun -N2 --gdr=auto: an MPI ping-pong over the rails, each rank sees its rails only; nodes restored" {
  mpicc -O2 -o "$GH_W/pingpong" "$BATS_TEST_DIRNAME/mpi_pingpong.c"
  run srun_fabric -N2 --ntasks-per-node=1 --mpi=pmix --gdr=auto \
    env OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=rail0 OMPI_MCA_pml=ob1 "$GH_W/pingpong"
  echo "$output"
  [ "$status" -eq 0 ] || { dump_logs; false; }
  [[ $output == *"pingpong: 100 round trips, 0 mismatched"* ]] || { dump_logs; false; }
  # Each rank: its node's name, lo and the two rails, nothing of the node's own links.
  grep -qE "on ${GH_P}-nodeB sees: lo rail[01] rail[01] \$" <<<"$output"
  grep -qE "on ${GH_P}-nodeA sees: lo rail[01] rail[01] \$" <<<"$output"
  # ... with its own node's rail addresses only, and a /sys/class/net of the rail namespace.
  grep -qE "on ${GH_P}-nodeA addresses: lo=127\.0\.0\.1 (rail[01]=198\.51\.100\.1[01] ){2}\$" <<<"$output"
  grep -qE "on ${GH_P}-nodeB addresses: lo=127\.0\.0\.1 (rail[01]=198\.51\.100\.2[01] ){2}\$" <<<"$output"
  grep -qE "on ${GH_P}-nodeA sysfs: lo rail0 rail1 \$" <<<"$output"
  grep -qE "on ${GH_P}-nodeB sysfs: lo rail0 rail1 \$" <<<"$output"
  # The plugin prepared each node once (plan and doctor report) and gave the rails back.
  [ -f "/run/gdr-harness/${GH_P}-nodeA/plan.json" ]
  [ -f "/run/gdr-harness/${GH_P}-nodeB/plan.json" ]
  wait_gone "/run/gdr-harness/${GH_P}-nodeA/run"
  wait_gone "/run/gdr-harness/${GH_P}-nodeB/run"
  grep -q "gdr: step .* on node ${GH_P}-nodeA holds the rails" "$GH_W/slurm/slurmd-${GH_P}-nodeA.log"
  teardown_both
}

@test "--gdr=auto --gdr-debug: the plan's NCCL environment in the tasks; --gdr=none leaves them on the node" {
  run srun_fabric -N1 -w "${GH_P}-nodeA" --gdr=none sh -c 'ip -o link show | cut -d: -f2 | sed "s/@.*//" | tr -d " " | sort | tr "\n" " "'
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"eth0 eth1 lo rail0 rail1 rail2 rail3"* ]]
  # The environment the plugin gives its tasks, from the node's plan.
  run srun_fabric -N1 -w "${GH_P}-nodeA" --gdr=auto --gdr-debug sh -c 'env | grep -E "^(NCCL_|GDR_HARNESS_NODE)" | sort'
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"NCCL_DEBUG=INFO"* ]]
  [[ $output == *"NCCL_SOCKET_IFNAME=eth0"* ]]
  [[ $output == *"GDR_HARNESS_NODE=${GH_P}-nodeA"* ]]
  # The task's /sys: the rail namespace's links, and the node's /sys submounts (cgroups) kept.
  local host_mounts
  host_mounts=$(findmnt -rn -o TARGET -R /sys | sort | tr '\n' ' ')
  run srun_fabric -N1 -w "${GH_P}-nodeA" --gdr=auto sh -c 'ls /sys/class/net | tr "\n" " "; echo; findmnt -rn -o TARGET -R /sys | sort | tr "\n" " "'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "lo rail0 rail1 " ]
  [ "${lines[1]}" = "$host_mounts" ]
  wait_gone "/run/gdr-harness/${GH_P}-nodeA/run"
  run on_node A teardown
  [ "$status" -eq 0 ]
  assert_restored A
}

@test "scancel mid-run: the steps' rails are given back on both nodes" {
  in_fabric timeout 120 srun -N2 --gdr=auto -J gdrcancel sleep 100 >"$GH_W/cancel.out" 2>&1 &
  spid=$!
  # Both nodes hold the rails (a step's journal on each).
  for ((i = 0; i < 100; i++)); do
    [[ -e /run/gdr-harness/${GH_P}-nodeA/run/journal.json && -e /run/gdr-harness/${GH_P}-nodeB/run/journal.json ]] && break
    sleep 0.2
  done
  [ -e "/run/gdr-harness/${GH_P}-nodeA/run/journal.json" ] || { cat "$GH_W/cancel.out"; dump_logs; false; }
  refute in_node A ip link show rail0 >/dev/null 2>&1
  job=$(in_fabric squeue -h -n gdrcancel -o %i)
  [ -n "$job" ]
  in_fabric scancel "$job"
  wait "$spid" || true
  for ((i = 0; i < 100; i++)); do
    [[ ! -e /run/gdr-harness/${GH_P}-nodeA/run && ! -e /run/gdr-harness/${GH_P}-nodeB/run ]] && break
    sleep 0.2
  done
  cat "$GH_W/cancel.out"
  [ ! -e "/run/gdr-harness/${GH_P}-nodeA/run" ] || { dump_logs; false; }
  [ ! -e "/run/gdr-harness/${GH_P}-nodeB/run" ]
  teardown_both
}

@test "--gdr-grant: a device not on the node's rails refuses the step (its tasks never run), none runs without one" {
  # The nodes' rails have no RDMA device: granting one is refused with a line naming it, and the
  # step is detached again.
  run srun_fabric -N1 -w "${GH_P}-nodeA" --gdr=auto --gdr-grant=mlx5_0 touch "$GH_W/granted-ran"
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"gdr: --gdr-grant: mlx5_0 is not an RDMA device of node ${GH_P}-nodeA's rails (they have none)"* ]]
  [ ! -e "$GH_W/granted-ran" ]
  wait_gone "/run/gdr-harness/${GH_P}-nodeA/run"
  # Options the plugin refuses before anything starts.
  run srun_fabric -N1 -w "${GH_P}-nodeA" --gdr=none --gdr-grant=mlx5_0 true
  [ "$status" -ne 0 ]
  [[ $output == *"gdr: --gdr-grant needs --gdr=auto"* ]]
  run srun_fabric -N1 -w "${GH_P}-nodeA" --gdr=auto --gdr-grant='mlx5_0 x' true
  [ "$status" -ne 0 ]
  [[ $output == *"gdr: --gdr-grant takes RDMA device names"* ]]
  # --gdr-grant=none: the rails without any RDMA device (and no NCCL_IB_HCA).
  run srun_fabric -N1 -w "${GH_P}-nodeA" --gdr=auto --gdr-grant=none sh -c 'echo "hca=${NCCL_IB_HCA-unset}"; ip -o link show | cut -d: -f2 | sed "s/@.*//" | tr -d " " | sort | tr "\n" " "'
  echo "$output"
  [ "$status" -eq 0 ]
  [[ $output == *"hca=unset"* ]]
  [[ $output == *"lo rail0 rail1 "* ]]
  wait_gone "/run/gdr-harness/${GH_P}-nodeA/run"
  run on_node A teardown
  [ "$status" -eq 0 ]
  assert_restored A
}

@test "a node whose rails cannot be attached: the step's tasks never run, even with the plugin optional" {
  # RDMA_IFACES names a rail the node does not have: prepare fails, and so the attach.
  run on_node A teardown
  local conf=$GH_W/slurm/plugstack.conf
  cp "$conf" "$conf.good"
  sed -i 's/RDMA_IFACES=rail0,rail1/RDMA_IFACES=nosuchrail9/' "$conf"
  run srun_fabric -N1 -w "${GH_P}-nodeA" --gdr=auto touch "$GH_W/attach-ran"
  cp "$conf.good" "$conf"
  echo "$output"
  [ "$status" -ne 0 ]
  [[ $output == *"gdr: "*"attach --key step-"*"failed on node ${GH_P}-nodeA"*"no rail selected on node ${GH_P}-nodeA"* ]]
  [ ! -e "$GH_W/attach-ran" ]
  [ ! -e "/run/gdr-harness/${GH_P}-nodeA/run" ]
  run on_node A teardown
  [ "$status" -eq 0 ]
  assert_restored A
}

@test "two steps at once on an unprepared node, two tasks each: one prepare, every task in one rail namespace, all given back" {
  run on_node A teardown
  [ "$status" -eq 0 ]
  local log=$GH_W/slurm/slurmd-${GH_P}-nodeA.log before joined
  before=$(grep -c "has no plan: preparing it" "$log" || true)
  joined=$(grep -c "joins node ${GH_P}-nodeA's running container network namespace" "$log" || true)
  # Each task: its step, rank, links and network namespace; the sleep keeps both steps attached
  # at once, so the second joins what the first set up.
  cat >"$GH_W/two-steps.sh" <<'SCRIPT'
#!/bin/bash
show='echo "step $SLURM_STEP_ID rank $SLURM_PROCID: $(ip -o link show | cut -d: -f2 | sed "s/@.*//" | tr -d " " | sort | tr "\n" " ")$(readlink /proc/self/ns/net)"; sleep 2'
srun --overlap -n2 --overcommit --gdr=auto sh -c "$show" &
srun --overlap -n2 --overcommit --gdr=auto sh -c "$show" &
wait
SCRIPT
  chmod +x "$GH_W/two-steps.sh"
  run in_fabric timeout 120 salloc -N1 -w "${GH_P}-nodeA" "$GH_W/two-steps.sh"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(grep -cE '^step [0-9]+ rank [01]: lo rail0 rail1 net:\[[0-9]+\]$' <<<"$output")" -eq 4 ]
  [ "$(grep -oE 'net:\[[0-9]+\]$' <<<"$output" | sort -u | wc -l)" -eq 1 ]
  [ "$(grep -cE '^step 0 ' <<<"$output")" -eq 2 ]
  [ "$(grep -cE '^step 1 ' <<<"$output")" -eq 2 ]
  [ "$(grep -c "has no plan: preparing it" "$log")" -eq $((before + 1)) ]
  [ "$(grep -c "joins node ${GH_P}-nodeA's running container network namespace" "$log")" -eq $((joined + 1)) ]
  wait_gone "/run/gdr-harness/${GH_P}-nodeA/run"
  run on_node A teardown
  [ "$status" -eq 0 ]
  assert_restored A
}
