#!/usr/bin/env bash
# NVIDIA's own tools in a sandbox behave as they do natively, with the default policy, under
# `gdrproxy run --mode enforce` and in a runc container served by `gdrproxy agent`
# (runc_container.sh with CTR_SCRIPT, every GPU granted):
#   - nvidia-smi and nvidia-smi -q print the same (compare_tools.py blanks what differs between
#     the native run before and the native run after);
#   - every nvmlDeviceGet* of libnvidia-ml.so.1 gives the same result codes (nvml_sweep.py);
#   - torch.compile (with its worker processes) and a CUPTI profile pass with 0 refusals, and the
#     profile records the same kernels as natively;
#   - setting the power limit (nvidia-smi -pl, a privileged firmware control) is refused, in one
#     line that names the command and why.
# Usage (GPU machine, repo root, root): tests/gpu/nvidia_tools.sh [BUNDLE_DIR]
# The last line is the result; OUT (default /tmp/gdrproxy-gpu) keeps the outputs under tools/.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
bundle=${1:-.gpu-bundle}
gp=$(realpath "$bundle/gdrproxy")
export LD_LIBRARY_PATH=$(realpath "$bundle/lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
d=${OUT:-/tmp/gdrproxy-gpu}/tools
rm -rf "$d"
mkdir -p "$d"
chmod 777 "$d"
# The tools' commands, writing into directory $1 with suffix $2.
tools() {
  cat <<SH
export TRITON_CACHE_DIR=/tmp/triton-\$\$
nvidia-smi > $1/smi.$2 2>&1
nvidia-smi -q > $1/smiq.$2 2>&1
python3 tests/gpu/nvml_sweep.py > $1/nvml.$2 2>&1
python3 tests/gpu/workloads.py compile > $1/compile.$2 2>&1
PROFILE_KERNELS=$1/kernels.$2 python3 tests/gpu/workloads.py profile > $1/profile.$2 2>&1
SH
}
result=pass
note() { echo "$*"; }
bad() { echo "FAIL: $*"; result=FAIL; }

bash -c "$(tools "$d" native1)"
"$gp" run --mode enforce -- bash -c "$(tools "$d" run)" 2>"$d/run.err"
CTR_SCRIPT="$(tools /out ctr)" CTR_OUT=$d tests/gpu/runc_container.sh "$bundle" >"$d/ctr.log" 2>&1
bash -c "$(tools "$d" native2)"

run_denied=$(grep -c "^gdrproxy: denied" "$d/run.err")
ctr_denied=$(tail -1 "$d/ctr.log" | sed -n 's/.*script: \([0-9]*\) denied$/\1/p')
[[ $run_denied == 0 ]] || { bad "run: $run_denied refusal(s)"; grep "denied" "$d/run.err" | head -5; }
[[ $ctr_denied == 0 ]] || { bad "container: '${ctr_denied}' refusal(s)"; tail -8 "$d/ctr.log"; }
declare -A cmp
for where in run ctr; do
  for t in smi smiq; do
    python3 tests/gpu/compare_tools.py text "$d/$t.native1" "$d/$t.native2" "$d/$t.$where" >"$d/cmp-$t-$where.txt"
    cmp[$t.$where]=$(tail -1 "$d/cmp-$t-$where.txt")
    [[ ${cmp[$t.$where]} == SAME ]] || { bad "$t in $where: ${cmp[$t.$where]}"; head -8 "$d/cmp-$t-$where.txt"; }
  done
  python3 tests/gpu/compare_tools.py nvml "$d/nvml.native1" "$d/nvml.native2" "$d/nvml.$where" >"$d/cmp-nvml-$where.txt"
  cmp[nvml.$where]="$(head -1 "$d/cmp-nvml-$where.txt" | cut -d, -f1): $(tail -1 "$d/cmp-nvml-$where.txt")"
  [[ ${cmp[nvml.$where]} == *SAME ]] || { bad "NVML in $where: ${cmp[nvml.$where]}"; head -8 "$d/cmp-nvml-$where.txt"; }
  for w in compile profile; do
    grep -q "^PASS $w" "$d/$w.$where" || { bad "$w in $where"; tail -5 "$d/$w.$where"; }
  done
  cmp -s "$d/kernels.native1" "$d/kernels.$where" || { bad "profile kernels differ in $where"; diff "$d/kernels.native1" "$d/kernels.$where" | head; }
done

# A privileged control: the power limit, set to what it is (natively root may).
pl=$(nvidia-smi -i 0 --query-gpu=power.limit --format=csv,noheader,nounits | cut -d. -f1)
"$gp" run --mode enforce -- nvidia-smi -i 0 -pl "$pl" >"$d/pl.out" 2>"$d/pl.err"
pl_line=$(grep "^gdrproxy: denied" "$d/pl.err" | head -1)
echo "nvidia-smi -pl $pl: $(head -1 "$d/pl.out")"
echo "  $pl_line"
[[ $pl_line == *"0x2080e61e"*"privileged bits"*"nvidia privileged: the driver lets only an administrator make it -> EPERM" ]] ||
  bad "the power limit was not refused by name"

echo "run: nvidia-smi ${cmp[smi.run]}, -q ${cmp[smiq.run]}, NVML ${cmp[nvml.run]}, $run_denied refused"
echo "container: nvidia-smi ${cmp[smi.ctr]}, -q ${cmp[smiq.ctr]}, NVML ${cmp[nvml.ctr]}, ${ctr_denied:-?} refused"
echo "NVIDIA tools (nvidia-smi, -q, NVML, torch.compile, CUPTI profile; run and container): $result"
