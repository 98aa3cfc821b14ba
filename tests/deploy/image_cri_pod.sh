#!/usr/bin/env bash
# The last step of tests/deploy/image_test.sh: a pod through containerd's CRI plugin (a private
# containerd, tests/cri/lib.sh, driven as a kubelet drives it) with the runtime handler the node
# installer put on the stand-in host root, served by the agent running in the image. The idea not
# to miss: the handler's name, runtime type and binary are read from the installed containerd
# drop-in (its BinaryName, a host path, found under the stand-in root) and the pod asks for the
# RuntimeClass's handler, so what the node installer wrote is what starts the pod.
# Run by image_test.sh in its mount namespace, inside a network namespace of its own (the CRI
# plugin's bridge), with DOCKER_HOST set to its dockerd.
# Usage: image_cri_pod.sh GDRPROXY BENCH HOST_ROOT AGENT_CONTAINER WORK   (fails, never skips)
set -uo pipefail
GP=$1 BENCH=$2 H=$3 AGENT=$4 WORK=$5
SRC=$(realpath "$(dirname "$0")/../..")
# shellcheck source=tests/oci/lib.sh
. "$SRC/tests/oci/lib.sh"
# shellcheck source=tests/cri/lib.sh
. "$SRC/tests/cri/lib.sh"
trap cri_cleanup EXIT
ip link set lo up

dropin=$H/etc/containerd/conf.d/gdrproxy.toml
handler=$(sed -n 's/.*containerd\.runtimes\.\([A-Za-z0-9_-]*\)\]$/\1/p' "$dropin" | head -1)
binary=$(sed -n 's/^ *BinaryName = "\(.*\)"$/\1/p' "$dropin")
class_handler=$(python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["handler"])' \
  "$SRC/deploy/kubernetes/runtimeclass.yaml")
[[ -n $handler && $handler == "$class_handler" ]] || fail "the installed drop-in's handler '$handler' is not the RuntimeClass's '$class_handler'"
# cri_containerd makes the handler "gdrproxy" with the runc v2 shim, as the drop-in says.
[[ $handler == gdrproxy ]] && grep -q 'runtime_type = "io.containerd.runc.v2"' "$dropin" ||
  fail "the installed drop-in is not a runc v2 handler named gdrproxy"
[[ -x $H$binary ]] || fail "the drop-in's BinaryName $binary is not installed under the host root"
cri_containerd "$H$binary" "$H/etc/gdrproxy/runtime.json"
cri_images
# The image, loaded as docs/CONTAINERS.md ("Image") says, is one the CRI plugin knows by the
# manifests' name.
docker save gdrproxy:latest | timeout 120 ctr -a "$CTD_SOCK" -n k8s.io images import --snapshotter "$CRI_SNAPSHOTTER" - \
  >"$WORK/import.out" 2>&1 || { cat "$WORK/import.out"; fail "docker save | ctr -n k8s.io images import -"; }
# The CRI plugin learns of an import from containerd's image events, later on a loaded machine:
# waited for up to 30 s (a hang guard, not a speed goal).
for ((i = SECONDS + 30; SECONDS < i;)); do cri inspecti gdrproxy:latest 2>/dev/null | grep -q '"id"' && break; sleep 0.2; done
cri inspecti gdrproxy:latest 2>/dev/null | grep -q '"id"' || fail "the CRI plugin does not know gdrproxy:latest after the import"

POD_JSON=$(cri_pod image-pod)
cri_runp "$POD_JSON" "$handler"
CRI_CTR_BINDS=$(dirname "$BENCH")
export CRI_CTR_BINDS
c=$(cri create "$CRI_POD" "$(cri_ctr image-pod app '[{"container_path": "/dev/infiniband/uverbs0", "host_path": "/dev/infiniband/uverbs0", "permissions": "rw"}]' \
  "$(jq -n --arg s "$BENCH client 3 /dev/infiniband/uverbs0 >/dev/null && echo bench: ok" '["sh", "-c", $s]')")" "$POD_JSON") ||
  fail "CreateContainer"
cri start "$c" || fail "StartContainer"
for i in $(seq 100); do [[ $(cri status "$c" | jq -r .state) == CONTAINER_EXITED ]] && break; sleep 0.1; done
log=$(cri status "$c" | jq -r .logPath)
grep -qa " bench: ok$" "$log" || { cat -v "$log"; fail "the pod's container did not run its calls"; }
cri stopp "$CRI_POD" && cri rmp "$CRI_POD" || fail "ending the pod"
for i in $(seq 50); do
  docker logs "$AGENT" >"$WORK/agent.log" 2>&1
  grep -qE "container $c ended: [1-9][0-9]* ioctl" "$WORK/agent.log" && break
  sleep 0.1
done
expect "$WORK/agent.log" "container $c ended: [1-9][0-9]* ioctl"
echo "the image imported into containerd's k8s.io namespace; a pod through containerd's CRI, handler $handler from the installed drop-in: its container's calls served by the agent in the image"
