#!/usr/bin/env bash
# A GPU through our CDI spec alone runs CUDA: `gdrproxy cdi generate` gives each GPU the loaded
# driver's libraries and tools as read-only mounts; a runc container under the agent whose
# rootfs has no driver library (each one the spec names is masked with /dev/null, as in an image
# built without them) cannot initialise CUDA, and the same container with the spec's mounts
# applied to its bundle, as an engine applies a device's containerEdits, runs the PyTorch
# matmul. Usage (GPU machine, repo root, root): tests/gpu/cdi_cuda.sh [BUNDLE_DIR]. Last line:
# the result.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
bundle=${1:-.gpu-bundle}
gp=$(realpath "$bundle/gdrproxy")
export LD_LIBRARY_PATH=$(realpath "$bundle/lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
d=${OUT:-/tmp/gdrproxy-gpu}/cdi
rm -rf "$d" && mkdir -p "$d" && chmod 777 "$d"
"$gp" cdi generate --output "$d/spec.json" 2>"$d/generate.err" || { cat "$d/generate.err"; echo "CDI CUDA: FAIL (generate)"; exit 1; }
# The masks (every driver library of the spec) and the spec's mounts of gpu0, as OCI mounts.
read -r masks edits n < <(python3 - "$d/spec.json" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
gpu = next(d["containerEdits"] for d in spec["devices"] if d["name"] == "gpu0")
libs = [m for m in gpu.get("mounts", []) if "/lib" in m["containerPath"]]
masks = [{"destination": m["containerPath"], "type": "bind", "source": "/dev/null", "options": ["bind", "ro"]} for m in libs]
edits = [{"destination": m["containerPath"], "type": "bind", "source": m["hostPath"], "options": m["options"]} for m in gpu.get("mounts", [])]
print(json.dumps(masks, separators=(",", ":")), json.dumps(edits, separators=(",", ":")), len(gpu.get("mounts", [])))
PY
)
echo "gpu0 carries $n driver files: $(jq -r '.devices[] | select(.name=="gpu0") | .containerEdits.mounts[].containerPath' "$d/spec.json" | xargs -n1 basename | paste -sd' ')"
probe="python3 -c 'import torch; print(\"cuda available:\", torch.cuda.is_available())'"
CTR_EXTRA_MOUNTS=$masks CTR_OUT=$d CTR_SCRIPT="$probe > /out/without.out 2>&1; true" \
  tests/gpu/runc_container.sh "$bundle" >"$d/without.log" 2>&1
CTR_EXTRA_MOUNTS=$(jq -c -n --argjson a "$masks" --argjson b "$edits" '$a + $b') CTR_OUT=$d \
  CTR_SCRIPT="$probe > /out/with.out 2>&1; python3 tests/gpu/workloads.py matmul >> /out/with.out 2>&1" \
  tests/gpu/runc_container.sh "$bundle" >"$d/with.log" 2>&1
echo "without the spec's mounts: $(tail -1 "$d/without.out")"
echo "with them: $(grep -E 'cuda available|PASS' "$d/with.out" | paste -sd' ')"
if grep -q "cuda available: False" "$d/without.out" && grep -q "cuda available: True" "$d/with.out" &&
   grep -q "^PASS matmul" "$d/with.out" && ((n > 0)); then
  echo "CDI CUDA (driver files from the spec, runc container, PyTorch matmul): pass"
else
  for f in without.log with.log without.out with.out; do echo "-- $f"; tail -n 5 "$d/$f"; done
  echo "CDI CUDA (driver files from the spec, runc container, PyTorch matmul): FAIL"
fi
