#!/usr/bin/env bash
# 8 concurrent CUDA processes (PyTorch matmul), each its own container session of one
# `gdrproxy agent` (runtime_client plays runc: a seccomp listener per process handed to the
# agent), against the same 8 run natively at the same time; median of ROUNDS alternating rounds.
# Also checks that every one passed and that the agent saw 8 sessions end. Run on the GPU
# machine from the repo root: tests/gpu/agent_sessions.sh [BUNDLE_DIR]
set -uo pipefail
cd "$(dirname "$0")/../.."
bundle=${1:-.gpu-bundle}
gp=$(realpath "$bundle/gdrproxy")
rc=$(realpath "$bundle/runtime_client")
export LD_LIBRARY_PATH=$(realpath "$bundle/lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
rounds=${ROUNDS:-3}
n=${SESSIONS:-8}
work=$(mktemp -d)
agent=
trap '[[ -n $agent ]] && kill $agent 2>/dev/null; rm -rf "$work"' EXIT
# Every GPU of this machine (one or more).
gpus=$(ls /dev | grep -E '^nvidia[0-9]+$' | sed 's/.*/"&"/' | paste -sd,)
echo '{"version": 1, "containers": [{"match": {"id": "gpu-*"}, "grants": ["nvidiactl", '"$gpus"', "nvidia-uvm"]}]}' >"$work/agent.json"
# AGENT_ARGS: more agent options (e.g. --sync-wakeup=true).
"$gp" agent --socket "$work/a.sock" --ctl-socket "$work/a.ctl" --config "$work/agent.json" ${AGENT_ARGS:-} >"$work/agent.log" 2>&1 &
agent=$!
for i in $(seq 100); do [[ -S $work/a.sock ]] && break; sleep 0.05; done
now() { date +%s.%N; }
batch() {  # MODE ROUND: n matmuls at once; prints the wall seconds; counts PASS lines
  local t0 pids=() i
  t0=$(now)
  for ((i = 0; i < n; i++)); do
    if [[ $1 == native ]]; then
      python3 tests/gpu/workloads.py matmul >"$work/$1-$2-$i.out" 2>&1 &
    else
      "$rc" "$work/a.sock" "gpu-$2-$i" runc-init -- python3 tests/gpu/workloads.py matmul >"$work/$1-$2-$i.out" 2>&1 &
    fi
    pids+=($!)
  done
  wait "${pids[@]}"
  python3 -c "print($(now) - $t0)"
}
declare -a tn ta
for ((r = 0; r < rounds; r++)); do
  tn+=("$(batch native $r)")
  ta+=("$(batch agent $r)")
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mn=$(median <<<"${tn[*]}") ma=$(median <<<"${ta[*]}")
passes=$(cat "$work"/agent-*.out | grep -c '^PASS matmul')
native_passes=$(cat "$work"/native-*.out | grep -c '^PASS matmul')
ended=$(grep -c "gpu-.* ended:" "$work/agent.log")
grep "gpu-0-0 ended" "$work/agent.log"
echo "native: ${tn[*]} s; agent: ${ta[*]} s"
printf "%d concurrent matmuls: native %.3f s, one agent %.3f s, agent/native %.3f; PASS %d/%d (native %d/%d), sessions ended %d\n" \
  "$n" "$mn" "$ma" "$(python3 -c "print($ma / $mn)")" "$passes" $((n * rounds)) "$native_passes" $((n * rounds)) "$ended"
[[ $passes == $((n * rounds)) && $ended == $((n * rounds)) ]]
