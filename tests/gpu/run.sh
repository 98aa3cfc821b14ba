#!/usr/bin/env bash
# The GPU machine's one script: builds the test programs, checks every workload natively and
# under `gdrproxy run --mode enforce` (default policy) and `--mode trace`, times them (median of 5
# alternating rounds), measures from the caller's side the time gdrproxy adds to device calls
# (tests/gpu/call_clock.c), compares NCCL's topology dump native vs proxied, and prints a short
# table last. Run from the repo root on the GPU test machine:
#   tests/gpu/run.sh [GDRPROXY_BUNDLE_DIR]
# ROUNDS=R rounds of each timing (default 5); CPUS=LIST pins the per-call bench (default 4,5 on
# hosts with more than 8 CPUs; CPUS= leaves it unpinned).
# The bundle (scripts/gpu-bundle.sh makes it here) holds build/gdrproxy, the tests' tool
# build/gdrproxy-testkit and the shared libraries they need, because that machine has no package manager.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
bundle=${1:-.gpu-bundle}
gp=$(realpath "$bundle/gdrproxy")
tk=$(realpath "$bundle/gdrproxy-testkit")
bundle_lib=$(realpath "$bundle/lib")
export LD_LIBRARY_PATH=$bundle_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
out=${OUT:-/tmp/gdrproxy-gpu}
rounds=${ROUNDS:-5}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== machine"
uname -r
head -1 /proc/driver/nvidia/version
nvidia-smi -L
"$gp" --help >/dev/null || { echo "gdrproxy does not run here"; exit 1; }

declare -A status trapped denied trapall
# check NAME CMD...: one enforce-mode run with stats; records pass/fail and counts.
check() {
  local name=$1; shift
  "$gp" run --mode enforce --stats -- "$@" >"$out/$name.out" 2>"$out/$name.err"
  local rc=$?
  local line; line=$(grep 'gdrproxy: served' "$out/$name.err" | tail -1)
  trapped[$name]=$(sed -n 's/.*served \([0-9]*\) notifications.*/\1/p' <<<"$line")
  denied[$name]=$(sed -n 's/.* \([0-9]*\) denied.*/\1/p' <<<"$line")
  if [[ $rc == 0 ]] && grep -q "^PASS" "$out/$name.out"; then status[$name]=pass; else status[$name]="FAIL($rc)"; fi
}

echo "== checks (enforce mode, default policy)"
# The CUDA check (gdrproxy's own, libcuda.so.1 loaded at run time) runs with a stand-in NIC so
# the REG_DMABUF_MR attempts reach a device node.
"$tk" standin "$gp" run --mode enforce --stats --trace-json "$out/cuda.jsonl" -- \
  "$tk" exercise cuda /dev/infiniband/uverbs0 \
  >"$out/cuda.out" 2>"$out/cuda.err"
rc=$?
cat "$out/cuda.out"
line=$(grep 'gdrproxy: served' "$out/cuda.err" | tail -1)
trapped[cuda]=$(sed -n 's/.*served \([0-9]*\) notifications.*/\1/p' <<<"$line")
denied[cuda]=$(sed -n 's/.* \([0-9]*\) denied.*/\1/p' <<<"$line")
# The one expected denial: the memfd passed off as a dma-buf.
if [[ $rc == 0 ]] && grep -q '^PASS cuda' "$out/cuda.out" && grep -q 'reg_dmabuf_memfd EPERM' "$out/cuda.out" \
   && grep -q 'reg_dmabuf_gpu ENOTTY' "$out/cuda.out" && [[ ${denied[cuda]} == 1 ]]; then
  status[cuda]=pass
else
  status[cuda]="FAIL($rc)"; tail -5 "$out/cuda.err"
fi
check matmul python3 tests/gpu/workloads.py matmul
check allreduce python3 tests/gpu/workloads.py allreduce
for w in matmul allreduce; do
  echo "$w: ${status[$w]}, $(grep 'gdrproxy: served' "$out/$w.err" | tail -1)"
  # The same run with every device ioctl trapped: what the in-kernel ALLOW saves.
  "$gp" run --mode enforce --stats --kernel-allow off -- python3 tests/gpu/workloads.py $w >/dev/null 2>"$out/$w-trapall.err"
  trapall[$w]=$(grep 'gdrproxy: served' "$out/$w-trapall.err" | tail -1 | sed -n 's/.*served \([0-9]*\) notifications.*/\1/p')
  echo "$w with --kernel-allow off: ${trapall[$w]} notifications (on: ${trapped[$w]})"
  [[ ${status[$w]} == pass ]] || tail -5 "$out/$w.err"
done
declare -A phases
for w in cuda matmul allreduce; do
  phases[$w]=$(grep -h 'per ioctl:' "$out/$w.err" | tail -1 | sed 's/.*per ioctl: //')
  echo "$w per ioctl: ${phases[$w]}"
done

echo "== per-call cost on a stand-in uverbs node (tests/bench/ioctl_latency.sh)"
# Pinned to two cores where the host has many (CPUS= empty: unpinned), as docs/PERFORMANCE.md
# measures the goal: unpinned, where the scheduler puts the caller and the supervisors moves
# every row more than the differences measured.
percall_cpus=${CPUS-}
if [[ -z ${CPUS+set} ]] && (($(nproc) > 8)); then percall_cpus=4,5; fi
CPUS=$percall_cpus tests/bench/ioctl_latency.sh "$bundle" 20000 | tee "$out/ioctl_latency.txt"
# Where that time goes, when the bundle carries perf (scripts/gpu-bundle.sh --perf).
if [[ -x $bundle/perf/perf ]]; then
  echo "== profile of the same calls (tests/bench/ioctl_profile.sh)"
  OUT=$work/profile tests/bench/ioctl_profile.sh "$bundle" 3 | tee "$out/profile.txt"
fi

echo "== attacks on the real driver (tests/security covers them on stand-ins)"
# RM_ALLOC under a policy that denies it, sent with the type byte the driver ignores set to 'F',
# 0x00 and 0x47: the driver runs every variant natively; under gdrproxy each must be EPERM.
echo '{"version":1,"classes":{"nvidia":{"rules":[{"action":"deny","escape":"RM_ALLOC"}]}}}' >"$work/deny-alloc.json"
attacks=pass
for t in 0x46 0x00 0x47; do
  native=$("$bundle/attack_client" nvioctl /dev/nvidiactl $t 0x2b 48 2>&1 | tail -1)
  proxied=$("$gp" run -q --mode enforce --policy "$work/deny-alloc.json" -- "$bundle/attack_client" nvioctl /dev/nvidiactl $t 0x2b 48 2>&1 | tail -1)
  echo "RM_ALLOC type $t: native '$native', under gdrproxy '$proxied'"
  [[ $proxied == *"ERR EPERM"* ]] || attacks=FAIL
done
echo "attacks: $attacks"

echo "== an ungranted GPU named through nvidiactl (RM_ALLOC of NV01_DEVICE_0 by device instance)"
# Natively, a process holding a GPU's node allocates a device object for that GPU's instance.
# Under gdrproxy granted nvidiactl and the first GPU only, exactly one instance allocates (the
# first GPU's) and every other is refused by gdrproxy (EACCES, with the GPU named) before the
# driver sees it; granted no GPU node, every instance is refused; and io_uring, which could open
# an ungranted GPU node around the broker, is refused.
nodes=(/dev/nvidia[0-9]*)
ngpu=${#nodes[@]}
gpu_grant=pass
for ((i = 0; i < ngpu; i++)); do
  echo "instance $i native, holding ${nodes[$i]}: $("$bundle/attack_client" nvdevice /dev/nvidiactl $i "${nodes[$i]}" 2>&1 | tail -1)"
done
allowed=0
for ((i = 0; i < ngpu; i++)); do
  r=$("$gp" run --grant nvidiactl,nvidia0 -- "$bundle/attack_client" nvdevice /dev/nvidiactl $i /dev/nvidia0 2>"$work/gpu-err" | tail -1)
  echo "instance $i, granted nvidia0: '$r' $(grep -o 'NV01_DEVICE_0.*' "$work/gpu-err")"
  case $r in
    *"OK status=0x0 "*) allowed=$((allowed + 1)) ;;
    *"ERR EACCES") grep -q "NV01_DEVICE_0 device instance $i" "$work/gpu-err" || gpu_grant=FAIL ;;
    *) gpu_grant=FAIL ;;
  esac
  r=$("$gp" run --grant nvidiactl -- "$bundle/attack_client" nvdevice /dev/nvidiactl $i 2>"$work/gpu-err" | tail -1)
  echo "instance $i, no GPU granted: '$r' $(grep -o 'NV01_DEVICE_0.*' "$work/gpu-err")"
  [[ $r == *"ERR EACCES" ]] || gpu_grant=FAIL
done
[[ $allowed == 1 ]] || { echo "expected exactly one instance allowed, got $allowed"; gpu_grant=FAIL; }
r=$("$gp" run -q --grant nvidiactl -- "$bundle/attack_client" open /dev/nvidia0 mode3 io_uring 2>&1 | tail -1)
echo "io_uring open of an ungranted GPU node: '$r'"
[[ $r == *"ERR ENOSYS" ]] || gpu_grant=FAIL
# A real workload granted the last GPU only sees that one GPU and runs on it (CUDA skips the
# GPU nodes whose open is refused, as in a container that lacks them).
r=$("$gp" run -q --grant nvidiactl,nvidia$((ngpu - 1)),nvidia-uvm -- python3 -c "import torch; x = torch.ones(1000, device='cuda'); print('count', torch.cuda.device_count(), 'sum', x.sum().item())" 2>&1 | tail -1)
echo "PyTorch granted nvidia$((ngpu - 1)) only: '$r'"
[[ $r == "count 1 sum 1000.0" ]] || gpu_grant=FAIL
echo "ungranted GPU: $gpu_grant"

echo "== topology (NCCL_TOPO_DUMP_FILE native vs proxied)"
NCCL_TOPO_DUMP_FILE=$out/topo-native.xml python3 tests/gpu/workloads.py allreduce >/dev/null 2>&1
NCCL_TOPO_DUMP_FILE=$out/topo-proxied.xml "$gp" run -q --mode enforce -- python3 tests/gpu/workloads.py allreduce >/dev/null 2>&1
if cmp -s "$out/topo-native.xml" "$out/topo-proxied.xml"; then topo=identical; else topo=DIFFERENT; diff "$out/topo-native.xml" "$out/topo-proxied.xml" | head; fi
echo "topology: $topo"

echo "== synthetic sysfs under real NCCL (tests/sysfs/gpu_nccl_topology.sh)"
tests/sysfs/gpu_nccl_topology.sh "$gp" "$work/sysfs-topo" >"$out/sysfs-topo.log" 2>&1
case $? in 0) sysfs_topo=identical ;; 77) sysfs_topo=skipped ;; *) sysfs_topo=FAIL; tail -5 "$out/sysfs-topo.log" ;; esac
echo "sysfs: $sysfs_topo"

echo "== timing ($rounds alternating rounds)"
declare -A times
now() { date +%s.%N; }
for ((i = 0; i < rounds; i++)); do
  for w in matmul allreduce; do
    for mode in ${MODES:-native enforce trace enforce-trapall}; do
      t0=$(now)
      case $mode in
        native) python3 tests/gpu/workloads.py $w >/dev/null 2>&1 ;;
        enforce) "$gp" run -q --mode enforce -- python3 tests/gpu/workloads.py $w >/dev/null 2>&1 ;;
        trace) "$gp" run -q --mode trace --trace-json "$out/$w-trace.jsonl" -- python3 tests/gpu/workloads.py $w >/dev/null 2>&1 ;;
        enforce-trapall) "$gp" run -q --kernel-allow off --mode enforce -- python3 tests/gpu/workloads.py $w >/dev/null 2>&1 ;;
        enforce-sync) "$gp" run -q --sync-wakeup on --mode enforce -- python3 tests/gpu/workloads.py $w >/dev/null 2>&1 ;;
        trace-sync) "$gp" run -q --sync-wakeup on --mode trace --trace-json "$out/$w-trace.jsonl" -- python3 tests/gpu/workloads.py $w >/dev/null 2>&1 ;;
      esac
      times[$w.$mode]+="$(python3 -c "print($(now) - $t0)") "
    done
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "== caller-side time in ioctl and open (tests/gpu/call_clock.c, $rounds alternating rounds)"
# The wall times above carry CUDA start-up's noise (tens of ms from run to run). What gdrproxy
# adds is the time its device calls take longer from the caller's side, plus its own start and
# exit: both measured here, each against a native baseline of the same rounds.
clock_lib=$(realpath "$bundle/call_clock.so")
declare -A cc
for ((i = 0; i < rounds; i++)); do
  for w in matmul allreduce; do
    for mode in native enforce trace; do
      d=$work/clock-$w-$mode-$i
      mkdir -p "$d"
      timed=(env LD_PRELOAD="$clock_lib" CALL_CLOCK_DIR="$d" python3 tests/gpu/workloads.py "$w")
      case $mode in
        native) "${timed[@]}" ;;
        enforce) "$gp" run -q --mode enforce -- "${timed[@]}" ;;
        trace) "$gp" run -q --mode trace --trace-json "$work/clock.jsonl" -- "${timed[@]}" ;;
      esac >/dev/null 2>&1
      # ioctl_calls open_calls total_ms max_process_ms
      read -r nio nop _ mx < <(python3 tests/gpu/call_clock_sum.py "$d")
      cc[$w.$mode.ioctls]+="$nio " cc[$w.$mode.opens]+="$nop " cc[$w.$mode.ms]+="$mx "
    done
  done
done
# gdrproxy's own start and exit: `run -- true` against `true`, 20 alternating runs each.
declare -A fixed
for ((i = 0; i < 20; i++)); do
  for mode in native enforce trace; do
    t0=$(now)
    case $mode in
      native) /bin/true ;;
      enforce) "$gp" run -q --mode enforce -- /bin/true ;;
      trace) "$gp" run -q --mode trace --trace-json "$work/fixed.jsonl" -- /bin/true ;;
    esac >/dev/null 2>&1
    fixed[$mode]+="$(python3 -c "print(($(now) - $t0) * 1000)") "
  done
done
declare -A added
for w in matmul allreduce; do
  n_ms=$(median <<<"${cc[$w.native.ms]}")
  wall_ms=$(python3 -c "print($(median <<<"${times[$w.native]}") * 1000)")
  for mode in enforce trace; do
    m_ms=$(median <<<"${cc[$w.$mode.ms]}")
    f_ms=$(python3 -c "print($(median <<<"${fixed[$mode]}") - $(median <<<"${fixed[native]}"))")
    added[$w.$mode]=$(python3 -c "
calls = $m_ms - $n_ms; fixed = $f_ms; wall = $wall_ms
print(f'{1 + (calls + fixed) / wall:.4f} (calls +{calls:.1f} ms, start/exit +{fixed:.1f} ms, native wall {wall:.0f} ms)')")
    echo "$w $mode: $(median <<<"${cc[$w.$mode.ioctls]}") ioctls, $(median <<<"${cc[$w.$mode.opens]}") opens; slowest process in them: $m_ms ms (native $n_ms ms) -> ${added[$w.$mode]}"
  done
done

echo "== 8 concurrent CUDA processes, each its own session of one agent (tests/gpu/agent_sessions.sh)"
agent8=$(ROUNDS=$rounds tests/gpu/agent_sessions.sh "$bundle" 2>&1 | tail -1)
echo "$agent8"
echo "== a runc container granted one GPU (tests/gpu/runc_container.sh)"
ctr=$(tests/gpu/runc_container.sh "$bundle" 2>&1 | tee "$out/runc_container.log" | tail -1)
echo "$ctr"
echo "== a container's trapped calls with its profile's untrapped requests, next to run's (tests/gpu/container_untrapped.sh)"
tests/gpu/container_untrapped.sh "$bundle" "$out/untrapped" 2>&1 | tee "$out/container_untrapped.log" | tail -4
untrapped=$(tail -1 "$out/container_untrapped.log")
echo "== NVIDIA's tools under run and in a container (tests/gpu/nvidia_tools.sh)"
OUT=$out tests/gpu/nvidia_tools.sh "$bundle" >"$out/nvidia_tools.log" 2>&1
grep -E "^FAIL|^line |not in the|^gpu " "$out/nvidia_tools.log" | head -12
tail -4 "$out/nvidia_tools.log"
tools=$(tail -1 "$out/nvidia_tools.log")
echo "== a GPU through the CDI spec alone runs CUDA (tests/gpu/cdi_cuda.sh)"
OUT=$out tests/gpu/cdi_cuda.sh "$bundle" 2>&1 | tail -3 | tee "$out/cdi_cuda.log"
cdi_cuda=$(tail -1 "$out/cdi_cuda.log")

echo
echo "== summary ($(date -u +%F), $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1))"
printf "%-10s %-8s %8s %7s %9s %10s %10s %10s\n" workload status trapped denied native_s enforce/n trace/n notes
printf "%-10s %-8s %8s %7s %9s %10s %10s %10s\n" cuda "${status[cuda]}" "${trapped[cuda]}" "${denied[cuda]}" - - - "1 denial expected (memfd)"
for w in matmul allreduce; do
  n=$(median <<<"${times[$w.native]}"); e=$(median <<<"${times[$w.enforce]}"); t=$(median <<<"${times[$w.trace]}")
  printf "%-10s %-8s %8s %7s %9.3f %10.3f %10.3f\n" $w "${status[$w]}" "${trapped[$w]}" "${denied[$w]}" "$n" \
    "$(python3 -c "print($e / $n)")" "$(python3 -c "print($t / $n)")"
  for extra in enforce-trapall enforce-sync trace-sync; do
    [[ -n ${times[$w.$extra]:-} ]] && printf "%-10s %-8s %8s %7s %9s %10.3f  (%s/native)\n" $w "" "" "" "" \
      "$(python3 -c "print($(median <<<"${times[$w.$extra]}") / $n)")" "$extra"
  done
done
for w in cuda matmul allreduce; do echo "$w per ioctl: ${phases[$w]}"; done
for w in matmul allreduce; do
  for mode in enforce trace; do echo "$w $mode, caller-side added time / native wall: ${added[$w.$mode]}"; done
done
for w in matmul allreduce; do echo "$w notifications: ${trapped[$w]} with in-kernel ALLOW, ${trapall[$w]} with --kernel-allow off"; done
for w in matmul allreduce; do
  echo "$w trap copies (enforce check): $(grep -o 'trap copies: [0-9]* of [0-9]*' "$out/$w.err" || echo none)"
done
grep -E 'raw|enforce|trace' "$out/ioctl_latency.txt" | sed 's/^/per-call: /'
echo "topology native vs proxied: $topo"
echo "RM_ALLOC type-byte variants under a denying policy: $attacks"
echo "ungranted GPU by device instance, and io_uring, refused: $gpu_grant"
echo "NCCL topology with the synthetic /sys vs the host's: $sysfs_topo"
echo "agent: $agent8 (goal <= 1.05)"
echo "container: $ctr"
echo "$untrapped"
echo "$tools"
echo "$cdi_cuda"
echo "goals: enforce/native <= 1.02, trace/native <= 1.10"
