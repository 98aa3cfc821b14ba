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
#     line that names the command and why;
#   - the trace of nvidia-smi -q names every control (no "unknown(");
#   - the same driver read as a later patch of its branch (its /proc version file says 580.178.04)
#     is judged with the branch's nearest lower release's tables: nvidia-smi -q prints the same,
#     0 refusals, and one line says which tables.
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

# Every control nvidia-smi -q sends is named in the trace.
"$gp" run --mode enforce --trace-json "$d/smiq.jsonl" -- nvidia-smi -q >/dev/null 2>"$d/smiq-trace.err"
unnamed=$(grep -c 'unknown(' "$d/smiq.jsonl")
traced=$(wc -l <"$d/smiq.jsonl")
echo "nvidia-smi -q trace: $traced calls, $unnamed with an unknown name"
[[ $traced -gt 100 && $unnamed == 0 ]] || { bad "nvidia-smi -q trace names not every call"; grep -o '"[^"]*unknown([^"]*"' "$d/smiq.jsonl" | sort | uniq -c | head; }

# The driver as a later patch of its branch would be: judged with the nearest lower release.
real=$(sed -n 's/.*Kernel Module.*  \([0-9][0-9.]*\)  .*/\1/p' /proc/driver/nvidia/version | head -1)
sed "s/  $real  /  580.178.04  /" /proc/driver/nvidia/version >"$d/version.patch"
unshare --mount --propagation private sh -c 'mount --bind "$0" /proc/driver/nvidia/version && exec "$@"' \
  "$d/version.patch" "$gp" run --mode enforce -- nvidia-smi -q >"$d/smiq.patch" 2>"$d/patch.err"
patch_denied=$(grep -c "^gdrproxy: denied" "$d/patch.err")
python3 tests/gpu/compare_tools.py text "$d/smiq.native1" "$d/smiq.native2" "$d/smiq.patch" >"$d/cmp-smiq-patch.txt"
patch_cmp=$(tail -1 "$d/cmp-smiq-patch.txt")
patch_note=$(grep -c "NVIDIA driver 580.178.04 is not in this build's tables: enforcing with 580.173.02's" "$d/patch.err")
echo "as 580.178.04 ($real's branch, tables 580.173.02): nvidia-smi -q $patch_cmp, $patch_denied refused, notice $patch_note"
[[ $patch_cmp == SAME && $patch_denied == 0 && $patch_note == 1 ]] || { bad "a later patch of the branch"; head -5 "$d/patch.err"; }

echo "run: nvidia-smi ${cmp[smi.run]}, -q ${cmp[smiq.run]}, NVML ${cmp[nvml.run]}, $run_denied refused"
echo "container: nvidia-smi ${cmp[smi.ctr]}, -q ${cmp[smiq.ctr]}, NVML ${cmp[nvml.ctr]}, ${ctr_denied:-?} refused"
echo "NVIDIA tools (nvidia-smi, -q, NVML, torch.compile, CUPTI profile; run and container): $result"
