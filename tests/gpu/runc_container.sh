#!/usr/bin/env bash
# A real runc container granted one GPU (the host's last) runs the PyTorch matmul of
# tests/gpu/workloads.py under `gdrproxy agent`. The bundle is prepared by `gdrproxy oci
# prepare`: the agent's listener with the grants in its metadata, /dev nodes of the grant only,
# the device cgroup (NVIDIA nodes only to be made: the agent opens them and injects the fd), and
# the synthetic /sys of that GPU. The rootfs is the host's own directories, bound read-only (the
# machine's Python and PyTorch). runc and its libseccomp come in the bundle dir: the GPU machine
# has no package manager. Checks: the container sees exactly one GPU and one nvidia PCI function
# in /sys, the matmul passes, its NVIDIA ioctls are in its own trace, and the agent denied
# nothing. The last line is the result.
# Usage (GPU machine, repo root, root): tests/gpu/runc_container.sh [BUNDLE_DIR]
# CTR_SCRIPT=... runs that shell script in the container instead, granted every GPU, with the
# host directory CTR_OUT bound writable at /out: the checks are then only that runc and the
# script exit 0, and the last line says how many calls the agent denied (nvidia_tools.sh).
# CTR_EXTRA_MOUNTS, a JSON list of OCI mounts, is appended to the config's (cdi_cuda.sh).
# CTR_KERNEL_ALLOW=1 prepares the bundle with `oci prepare --kernel-allow` on the bundle's
# deny-by-default base (scripts/gpu-bundle.sh): the requests the policy allows unread run
# untrapped, as under `gdrproxy run`; the agent's "ended" line then counts fewer ioctls.
set -uo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
bundle=${1:-.gpu-bundle}
gp=$(realpath "$bundle/gdrproxy")
runc=$(realpath "$bundle/runc")
host_path=$PATH host_ld=${LD_LIBRARY_PATH:-}
export LD_LIBRARY_PATH=$(realpath "$bundle/lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
work=$(mktemp -d /tmp/gdrproxy-gpuctr.XXXXXX)
chmod 755 "$work"
agent=
trap '"$runc" --root "$work/runc" delete -f gpu-ctr-1 >/dev/null 2>&1; [[ -n $agent ]] && kill $agent 2>/dev/null; rm -rf "$work"' EXIT
fail() {
  echo "--- container output:"; cat "$work/c.out" 2>/dev/null | tail -30
  [[ -f $work/agent.log ]] && sed 's/^/  [agent] /' "$work/agent.log" | tail -20
  echo "runc container granted one GPU: FAIL: $*"
  exit 1
}
[[ -x $runc ]] || fail "no runc in $bundle (scripts/gpu-bundle.sh copies the build machine's)"
"$runc" --version >/dev/null 2>&1 || fail "the bundle's runc does not run here"
gpus=(/dev/nvidia[0-9]*)
[[ -e ${gpus[0]} ]] || fail "no /dev/nvidiaN here"
last=${gpus[-1]##*/}
grant_gpus=$last
if [[ -n ${CTR_SCRIPT:-} ]]; then
  grant_gpus=$(printf '%s\n' "${gpus[@]##*/}" | paste -sd,)
  [[ -d ${CTR_OUT:-} ]] || fail "CTR_SCRIPT needs CTR_OUT, an existing directory"
fi

mkdir -p "$work/traces"
# UVM's requests qualify for running untrapped only with every UVM node granted: nvidia-uvm-tools
# too, as container engines give GPU containers.
uvm=nvidia-uvm
[[ -n ${CTR_KERNEL_ALLOW:-} && -e /dev/nvidia-uvm-tools ]] && uvm=nvidia-uvm,nvidia-uvm-tools
grant_json=$(printf '"%s",' nvidiactl ${uvm//,/ } ${grant_gpus//,/ })
grant_json="[${grant_json%,}]"
# A traced container may let nothing run untrapped (a trace records every call).
trace=true
[[ -n ${CTR_KERNEL_ALLOW:-} ]] && trace=false
cat >"$work/agent.json" <<EOF
{"version": 1, "containers": [{"match": {"id": "gpu-ctr-*"},
  "grants": $grant_json, "grants_from_metadata": true, "trace": $trace}]}
EOF
"$gp" agent --socket "$work/a.sock" --ctl-socket "$work/a.ctl" --config "$work/agent.json" \
  --trace-dir "$work/traces" >"$work/agent.log" 2>&1 &
agent=$!
for i in $(seq 100); do [[ -S $work/a.sock ]] && break; sleep 0.05; done
[[ -S $work/a.sock ]] || fail "the agent did not start"

# The rootfs: the host's top-level directories bound read-only (symlinks copied), with its own
# /proc, /dev, /sys (prepare's), /tmp and /run; the repository bound at its path.
b=$work/bundle
r=$b/rootfs
mkdir -p "$r"/{proc,dev,sys,tmp,run}
binds=()
for d in /*; do
  n=${d#/}
  case $n in proc | sys | dev | tmp | run | lost+found) continue ;; esac
  if [[ -L $d ]]; then
    ln -s "$(readlink "$d")" "$r/$n"
  elif [[ -d $d ]]; then
    mkdir -p "$r/$n"
    binds+=("$d")
  fi
done
CTR_EXTRA_MOUNTS=${CTR_EXTRA_MOUNTS:-[]} python3 - "$b/config.json" "$repo" "$host_path" "$host_ld" "${CTR_SCRIPT:-}" "${CTR_OUT:-}" "${binds[@]}" <<'PY'
import json, os, sys
path, repo, host_path, host_ld, custom, out, *binds = sys.argv[1:]
script = custom or ("python3 -c 'import torch; print(\"count\", torch.cuda.device_count())'; "
                    "python3 tests/gpu/workloads.py matmul; "
                    "echo dev: $(ls /dev | grep nvidia); "
                    "echo pci-nvidia: $(ls /sys/bus/pci/drivers/nvidia 2>/dev/null | grep -c :)")
env = ["PATH=" + host_path, "HOME=/root"] + (["LD_LIBRARY_PATH=" + host_ld] if host_ld else [])
bind = lambda src, ro=True: {"destination": src, "type": "bind", "source": src,
                              "options": ["rbind"] + (["ro"] if ro else [])}
json.dump({
  "ociVersion": "1.0.2",
  "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "cwd": repo,
              "args": ["sh", "-c", script], "env": env, "noNewPrivileges": True},
  "root": {"path": "rootfs", "readonly": True},
  "hostname": "gpu-ctr",
  "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
             {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
              "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
             {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
              "options": ["nosuid", "nodev", "mode=1777", "size=1g"]},
             {"destination": "/sys", "type": "sysfs", "source": "sysfs",
              "options": ["nosuid", "noexec", "nodev", "ro"]},
             {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"]},
             {"destination": "/run", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"]}]
            + [bind(d) for d in binds] + [bind(repo)]
            + ([{"destination": "/out", "type": "bind", "source": out, "options": ["rbind"]}]
               if out else [])
            + json.loads(os.environ["CTR_EXTRA_MOUNTS"]),
  "linux": {"namespaces": [{"type": t} for t in ("pid", "mount", "ipc", "uts")],
            # Deny-by-default, as container engines do (runc allows its default nodes back).
            "resources": {"devices": [{"allow": False, "access": "rwm"}]}},
}, open(path, "w"), indent=1)
PY
[[ -n ${CTR_OUT:-} ]] && mkdir -p "$r/out"
untrapped=()
[[ -n ${CTR_KERNEL_ALLOW:-} ]] && untrapped=(--kernel-allow --base "$(realpath "$bundle/deny-default-base.json")")
"$gp" oci prepare "$b" --grant "nvidiactl,$uvm,$grant_gpus" --listener "$work/a.sock" \
  "${untrapped[@]}" >"$work/prepare.out" 2>&1 || { cat "$work/prepare.out"; fail "oci prepare failed"; }
cat "$work/prepare.out"
timeout 300 "$runc" --root "$work/runc" run --bundle "$b" gpu-ctr-1 >"$work/c.out" 2>&1
rc=$?
[[ $rc == 0 ]] || fail "runc exit $rc"
grep -v "^PASS\|^count\|^dev:\|^pci" "$work/c.out" | tail -5
for i in $(seq 50); do grep -q "gpu-ctr-1 ended" "$work/agent.log" && break; sleep 0.1; done
if [[ -n ${CTR_SCRIPT:-} ]]; then
  grep "denied" "$work/agent.log" | grep -v "ended" | head -20
  ended=$(grep "container gpu-ctr-1 ended" "$work/agent.log")
  echo "$ended"
  echo "runc container granted $grant_gpus ran the script: $(sed -n 's/.* \([0-9]*\) denied.*/\1/p' <<<"$ended") denied"
  exit 0
fi
count=$(sed -n 's/^count //p' "$work/c.out")
pci=$(sed -n 's/^pci-nvidia: //p' "$work/c.out")
ended=$(grep "container gpu-ctr-1 ended" "$work/agent.log")
denied=$(sed -n 's/.* \([0-9]*\) denied.*/\1/p' <<<"$ended")
nv_traced=$(jq -s '[.[] | select(.syscall == "ioctl" and (.device | startswith("nvidia")))] | length' \
  "$work/traces/gpu-ctr-1.jsonl" 2>/dev/null || echo 0)
grep "^dev:" "$work/c.out"
echo "$ended"
[[ $count == 1 ]] || fail "the container sees $count GPU(s), not 1"
grep -q "^PASS matmul" "$work/c.out" || fail "the matmul did not pass"
[[ $pci == 1 ]] || fail "/sys shows $pci nvidia PCI function(s), not 1"
[[ $denied == 0 ]] || { grep "denied" "$work/agent.log"; fail "$denied denial(s)"; }
((nv_traced > 0)) || fail "no NVIDIA ioctl in the container's trace"
echo "runc container granted $last: PASS (1 GPU seen, /sys shows 1, matmul passed, $nv_traced NVIDIA ioctls traced, 0 denied)"
