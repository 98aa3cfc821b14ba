#!/usr/bin/env bash
# The node image (scripts/build-image.sh, deploy/image/Dockerfile) run as deploy/kubernetes/
# runs it, on a private dockerd: the node installer's init step puts gdrproxy on a stand-in host
# root, and the agent's DaemonSet container serves a container started through the installed
# runtime handler. The idea not to miss: every `docker run` of the image is derived from the
# manifests (tests/deploy/docker_run_args.py: hostPID, privileged, each volume and mount with its
# propagation, the image, the command), so the manifests and this test use the same mounts; the
# test's "host" is its own mount namespace, where /run/gdrproxy and /run/containerd (a tmpfs over
# /run; the engines keep their bundles there), /dev (stand-in device nodes) and /sys/fs/bpf (a
# fresh bpffs) are the hostPaths themselves, and only the node installer's host root `/` is a
# directory of the test's ($WORK/host, holding the host's libraries for its chroot step). Checked:
#   - the script builds the base (debootstrap, timed) and the image; a second run reuses the base;
#   - the installer's command installs the binary, its gdrproxy-runtime link, the ConfigMap's
#     configs, containerd's drop-in and a CDI spec;
#   - the agent's pod: the fd store's holder in a container of its own, started first, and the
#     agent's container; its mounts: /run/gdrproxy follows mounts made on the host after it
#     started (HostToContainer), /sys/fs/bpf is the host's bpffs; it reads the bundles under
#     /run/containerd;
#   - `docker run --runtime gdrproxy` (the installed link, the installed runtime.json with
#     "sysfs": false, the rig's one edit) with a stand-in uverbs node: the container's ioctls
#     are served by the agent in the image;
#   - the agent's container killed (every process in it) and started again, as the kubelet
#     restarts it: a container running meanwhile is re-attached and served (the holder's
#     container kept its listener);
#   - a pod through containerd's CRI plugin with the handler of the installed drop-in
#     (tests/deploy/image_cri_pod.sh): likewise served.
# Usage: image_test.sh GDRPROXY BUILD_DIR   (root, docker.io, debootstrap, Debian's mirror; 77 = skipped)
set -uo pipefail
GP=$(realpath "$1")
B=$(realpath "$2")
SRC=$(realpath "$(dirname "$0")/../..")
BENCH=$B/tests/bench/ioctl_bench
MIRROR=${GDRPROXY_DEBIAN_MIRROR:-http://deb.debian.org/debian}
command -v dockerd >/dev/null && [[ -x /usr/bin/docker ]] ||
  { echo "SKIP: docker.io is not installed (scripts/setup.sh installs it)"; exit 77; }
command -v debootstrap >/dev/null || { echo "SKIP: debootstrap is not installed (scripts/setup.sh installs it)"; exit 77; }
python3 -c 'import yaml' 2>/dev/null || { echo "SKIP: python3-yaml is not installed"; exit 77; }
[[ -x $BENCH ]] || { echo "SKIP: no $BENCH"; exit 77; }
command -v containerd >/dev/null && /usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null &&
  command -v protoc >/dev/null || { echo "SKIP: the CRI step needs containerd, python3-grpcio, python3-protobuf and protobuf-compiler"; exit 77; }
# shellcheck source=tests/oci/lib.sh
. "$SRC/tests/oci/lib.sh"
# The host's network namespace: debootstrap reads Debian's mirror.
OCI_ENTER_TIMEOUT=${OCI_ENTER_TIMEOUT:-900} oci_enter "$GP" host "$0" "$@"
curl -sfI --max-time 20 "$MIRROR/dists/bookworm/Release" >/dev/null ||
  { echo "SKIP: Debian's mirror $MIRROR does not answer (debootstrap needs it)"; exit 77; }
WORK=$(mktemp -d /tmp/gdrproxy-image.XXXXXX)
chmod 755 "$WORK"
DOCKERD_PID='' AGENT=gdrproxy-agent-$$ HOLDER=gdrproxy-fd-store-$$
# The engines' state (containers' bundles) under /run/containerd, as on a node (below).
DW=/run/containerd/docker-$$ CW=/run/containerd/cri-$$
cleanup() {
  WORK=$DW oci_dockerd_stop
  rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT
# fail (lib.sh) shows $WORK/agent.log: the agent container's log, once it runs.
agent_log() { docker logs "$AGENT" >"$WORK/agent.log" 2>&1; }

# The test's host paths: /run/gdrproxy on a tmpfs of its own (shared, so that HostToContainer
# has mounts to follow), /sys/fs/bpf a bpffs of its own; /dev is the stand-in one (oci_enter).
mount -t tmpfs -o mode=755 tmpfs /run && mkdir /run/gdrproxy /run/containerd && mount --make-rshared /run ||
  fail "cannot mount a tmpfs over /run"
mount -t bpf bpf /sys/fs/bpf || fail "cannot mount a bpffs on /sys/fs/bpf"
[[ -c /dev/infiniband/uverbs0 ]] || fail "no stand-in /dev/infiniband/uverbs0"
# The node installer's host root: a Debian host's /usr/local/bin and /etc, empty, and copies of
# the libraries gdrproxy links (its chroot step runs the installed binary there).
H=$WORK/host
mkdir -p "$H/usr/lib" "$H/usr/lib64" "$H/usr/local/bin" "$H/etc" && ln -s usr/lib "$H/lib" && ln -s usr/lib64 "$H/lib64" ||
  fail "cannot make the stand-in host root"
for lib in $(ldd "$GP" | grep -o '/[^ ]*'); do
  cp -L --parents "$lib" "$H" || fail "cannot copy $lib into the stand-in host root"
done
# Where the manifests' hostPaths are here.
HOST_PATHS=(/run/gdrproxy=/run/gdrproxy /run/containerd=/run/containerd /dev=/dev /sys/fs/bpf=/sys/fs/bpf /="$H")
# run_args DAEMONSET CONTAINER: the `docker run` arguments of that container (NUL-separated in
# the array ARGS).
run_args() {
  python3 "$SRC/tests/deploy/docker_run_args.py" "$SRC/deploy/kubernetes" "$1" "$2" "$WORK/configmaps" \
    "${HOST_PATHS[@]}" >"$WORK/args" || fail "the manifests' $1/$2 does not translate to docker run"
  mapfile -d '' ARGS <"$WORK/args"
  echo "docker run ${ARGS[*]}" | head -c 2000 >>"$WORK/docker-runs.log"
}

# The runtime handler is the installed link with the installed config, as a node's would be
# (daemon.json's runtime "gdrproxy"; the files come with the installer below). The agent reads
# each container's bundle at the path the runtime names: dockerd's (and below the CRI's)
# containerd keeps them under /run/containerd, the manifest's volume for a node's containerd,
# here in this test's /run (dockerd's everything too: oci_dockerd puts it under its WORK).
mkdir -p "$DW" && chmod 755 "$DW"
WORK=$DW oci_dockerd "$H/etc/gdrproxy/runtime.json" "$H/usr/local/bin/gdrproxy-runtime"

# Test rig: where this machine's capability bounding set lacks some capability (a node has them
# all), runc cannot give a privileged container every one; the image's containers then run under
# "runc-bounded", runc with the capabilities this machine lacks taken out of the bundle.
missing=$(( ~0x$(awk '/^CapBnd/ {print $2}' /proc/self/status) & ((1 << ($(cat /proc/sys/kernel/cap_last_cap) + 1)) - 1) ))
IMAGE_RUNTIME=()
if ((missing)); then
  lacks=$(capsh --decode="$(printf '%x' "$missing")" | sed 's/.*=//' | tr '[:lower:]' '[:upper:]') || fail "capsh (libcap2-bin) is needed"
  echo "this machine's bounding set lacks $lacks: the image's privileged containers run under runc-bounded"
  cat >"$WORK/runc-bounded" <<EOS
#!/bin/sh
# runc, the bundle's capabilities without $lacks (this machine's bounding set lacks them).
prev=
for a; do
  if [ "\$prev" = --bundle ] || [ "\$prev" = -b ]; then
    jq --arg drop "$lacks" '(\$drop | split(",")) as \$d | .process.capabilities |= map_values(map(select(IN(\$d[]) | not)))' \
      "\$a/config.json" >"\$a/config.json.bounded" && mv "\$a/config.json.bounded" "\$a/config.json" || exit 1
  fi
  prev=\$a
done
exec runc "\$@"
EOS
  chmod 755 "$WORK/runc-bounded"
  jq --arg p "$WORK/runc-bounded" '.runtimes["runc-bounded"] = {path: $p}' "$DW/daemon.json" >"$DW/daemon.json.new" &&
    mv "$DW/daemon.json.new" "$DW/daemon.json" && kill -HUP "$DOCKERD_PID" || fail "adding runc-bounded"
  for i in $(seq 50); do docker info 2>/dev/null | grep -q runc-bounded && break; sleep 0.1; done
  IMAGE_RUNTIME=(--runtime runc-bounded)
fi

# 1. The image, built by the script; a second run reuses the base.
build() { TMPDIR=$WORK DOCKER=/usr/bin/docker timeout 600 "$SRC/scripts/build-image.sh" --build-dir "$B" --mirror "$MIRROR"; }
t0=$SECONDS
build >"$WORK/build1.log" 2>&1 || { cat "$WORK/build1.log"; fail "scripts/build-image.sh (first run)"; }
t1=$SECONDS
build >"$WORK/build2.log" 2>&1 || { cat "$WORK/build2.log"; fail "scripts/build-image.sh (second run)"; }
t2=$SECONDS
cat "$WORK/build1.log" "$WORK/build2.log"
expect "$WORK/build1.log" "gdrproxy-base:bookworm built in"
expect "$WORK/build2.log" "gdrproxy-base:bookworm is current"
echo "image: first build $((t1 - t0)) s (base and image), second $((t2 - t1)) s (image on the cached base)"

# 2. The node installer's init step.
run_args gdrproxy-node-installer install
docker run --rm --network none "${IMAGE_RUNTIME[@]}" "${ARGS[@]}" >"$WORK/install.out" 2>&1 ||
  { cat "$WORK/install.out"; fail "the node installer's command failed"; }
cmp -s "$H/usr/local/bin/gdrproxy" <(docker run --rm --network none gdrproxy:latest cat /usr/local/bin/gdrproxy) &&
  [[ -x $H/usr/local/bin/gdrproxy ]] || fail "the installer did not install the image's gdrproxy"
[[ $(readlink "$H/usr/local/bin/gdrproxy-runtime") == gdrproxy ]] || fail "no gdrproxy-runtime link"
for f in runtime.json agent.json; do
  cmp -s "$H/etc/gdrproxy/$f" "$WORK/configmaps/gdrproxy-config/$f" || fail "etc/gdrproxy/$f is not the ConfigMap's"
done
cmp -s "$H/etc/containerd/conf.d/gdrproxy.toml" "$WORK/configmaps/gdrproxy-config/containerd-gdrproxy.toml" ||
  fail "containerd's drop-in is not the ConfigMap's"
# Test rig: a stand-in node has no RDMA device in /sys to build a container's /sys from; the
# operator's one edit of the installed runtime config here.
jq '.sysfs = false' "$H/etc/gdrproxy/runtime.json" >"$WORK/runtime.json" && cp "$WORK/runtime.json" "$H/etc/gdrproxy/runtime.json" ||
  fail "editing the installed runtime.json"
kind=$("$H/usr/local/bin/gdrproxy" cdi generate --no-driver-files | jq -r .kind)
jq -e --arg k "$kind" '.kind == $k and (.devices | length) >= 1' "$H/etc/cdi/gdrproxy.json" >/dev/null ||
  fail "the installer wrote no CDI spec of kind $kind"

# 3. The agent's pod as its DaemonSet runs it: the fd store's holder first, then the agent (which
# waits for it); the agent's socket appears in the host's /run/gdrproxy.
run_args gdrproxy-agent fd-store
docker run -d --name "$HOLDER" --network none "${IMAGE_RUNTIME[@]}" "${ARGS[@]}" >/dev/null || fail "docker run of the fd-store container"
run_args gdrproxy-agent agent
docker run -d --name "$AGENT" --network none "${IMAGE_RUNTIME[@]}" "${ARGS[@]}" >/dev/null || fail "docker run of the agent's container"
for i in $(seq 100); do [[ -S /run/gdrproxy/agent.sock ]] && break; sleep 0.1; done
[[ -S /run/gdrproxy/agent.sock ]] || { agent_log; fail "the agent in the image made no /run/gdrproxy/agent.sock"; }
# The mounts: one made on the host under /run/gdrproxy after the agent started reaches it (as
# the rail hooks' pinned network namespaces must), and /sys/fs/bpf is the host's.
mkdir /run/gdrproxy/probe-$$ /sys/fs/bpf/probe-$$ && mount -t tmpfs tmpfs /run/gdrproxy/probe-$$ &&
  touch /run/gdrproxy/probe-$$/seen || fail "cannot make the probes"
# (Seen from the agent's mount namespace with nsenter.)
in_agent=(nsenter -t "$(docker inspect -f '{{.State.Pid}}' "$AGENT")" -m)
"${in_agent[@]}" ls /run/gdrproxy/probe-$$/seen >"$WORK/probe.out" 2>&1 ||
  { cat "$WORK/probe.out"; "${in_agent[@]}" grep /run/gdrproxy /proc/self/mountinfo
    fail "a mount made under /run/gdrproxy after the agent started does not reach it"; }
"${in_agent[@]}" ls -d /sys/fs/bpf/probe-$$ >"$WORK/probe.out" 2>&1 ||
  { cat "$WORK/probe.out"; fail "the agent's /sys/fs/bpf is not the host's"; }
umount /run/gdrproxy/probe-$$ && rmdir /run/gdrproxy/probe-$$ /sys/fs/bpf/probe-$$

# 4. A container through the installed runtime handler, served by the agent in the image.
oci_rootfs "$WORK/skel" "$(dirname "$BENCH")"
tar -C "$WORK/skel/rootfs" -cf "$WORK/skel.tar" . && docker import "$WORK/skel.tar" gdrproxy-test:1 >/dev/null ||
  fail "docker import failed"
bdir=$(dirname "$BENCH")
docker run --rm --name "work-$$" --runtime gdrproxy --network none -v /usr/lib:/usr/lib:ro \
  -v /usr/lib64:/usr/lib64:ro -v "$bdir:$bdir:ro" --device /dev/infiniband/uverbs0 gdrproxy-test:1 \
  sh -c "echo ib: \$(ls /dev/infiniband); $BENCH client 3 /dev/infiniband/uverbs0 >/dev/null && echo bench: ok" \
  >"$WORK/work.out" 2>&1 || { rc=$?; cat "$WORK/work.out"; agent_log; fail "docker run --runtime gdrproxy exit $rc"; }
expect "$WORK/work.out" "^ib: uverbs0$"
expect "$WORK/work.out" "^bench: ok$"
for i in $(seq 50); do
  agent_log
  grep -qE "container [0-9a-f]{64} ended: [1-9][0-9]* ioctl" "$WORK/agent.log" && break
  sleep 0.1
done
expect "$WORK/agent.log" "container [0-9a-f]{64} ended: [1-9][0-9]* ioctl"
grep "ended:" "$WORK/agent.log" | grep -v " 0 denied" && fail "the agent denied calls"

# 5. The agent's container killed whole (its process crashed, say) and started again, as the
# kubelet restarts it: a container served before goes on being served, its listener kept by the
# fd-store container meanwhile.
docker logs "$HOLDER" 2>&1 | grep -q "holding containers' listeners at /run/gdrproxy/fds.sock" ||
  { docker logs "$HOLDER"; fail "the fd-store container holds no store at /run/gdrproxy/fds.sock"; }
mkdir -m 755 "$WORK/hold" || fail "mkdir $WORK/hold"
LONG=long-$$
docker run -d --name "$LONG" --runtime gdrproxy --network none -v /usr/lib:/usr/lib:ro \
  -v /usr/lib64:/usr/lib64:ro -v "$bdir:$bdir:ro" -v "$WORK/hold:/hold:ro" --device /dev/infiniband/uverbs0 gdrproxy-test:1 \
  sh -c "$BENCH client 3 /dev/infiniband/uverbs0 >/dev/null && echo before: ok
    while [ ! -e /hold/go ]; do sleep 0.1; done
    $BENCH client 3 /dev/infiniband/uverbs0 >/dev/null && echo after: ok" >/dev/null || fail "docker run of $LONG"
for i in $(seq 100); do docker logs "$LONG" 2>&1 | grep -q "^before: ok$" && break; sleep 0.1; done
docker logs "$LONG" >"$WORK/long.out" 2>&1
expect "$WORK/long.out" "^before: ok$"
docker kill "$AGENT" >/dev/null || fail "docker kill of the agent's container"
docker start "$AGENT" >/dev/null || fail "docker start of the agent's container"
[[ $(docker inspect -f '{{.State.Running}}' "$HOLDER") == true ]] || fail "the fd-store container died with the agent's"
for i in $(seq 100); do
  agent_log
  grep -q "re-attached from the fd store" "$WORK/agent.log" && break
  sleep 0.1
done
expect "$WORK/agent.log" "container [0-9a-f]{64}: re-attached from the fd store"
touch "$WORK/hold/go"
rc=$(docker wait "$LONG") || fail "docker wait $LONG"
docker logs "$LONG" >"$WORK/long.out" 2>&1
[[ $rc == 0 ]] || { cat "$WORK/long.out"; fail "the container re-attached after the agent's restart exit $rc"; }
expect "$WORK/long.out" "^after: ok$"
docker rm "$LONG" >/dev/null

# 6. A pod through containerd's CRI plugin with the handler the installer wrote, in a network
# namespace of its own (the CRI plugin's bridge).
mkdir -m 755 "$CW" || fail "mkdir $CW"
unshare --net "$SRC/tests/deploy/image_cri_pod.sh" "$GP" "$BENCH" "$H" "$AGENT" "$CW" >"$WORK/cri.out" 2>&1 ||
  { cat "$WORK/cri.out"; fail "the pod through containerd's CRI"; }
cat "$WORK/cri.out"
echo "PASS: the image built by scripts/build-image.sh (base reused on the second run), the node installer's command installed gdrproxy, its link, configs, containerd's drop-in and a CDI spec, and the agent in the image, mounted as its DaemonSet says beside its fd-store container, served a container started through the installed runtime (docker), kept serving it across a kill and restart of its container, and served a pod through the installed handler (containerd's CRI)"
