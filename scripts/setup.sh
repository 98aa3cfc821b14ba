#!/usr/bin/env bash
# Installs every build and test dependency of gdrproxy on Debian 12, then configures and builds
# into build/. Idempotent and non-interactive: safe to run again on a machine that already has
# everything (apt-get is then a no-op and the build is incremental).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config clang llvm lld clang-format
  # interception engine
  libseccomp-dev libbpf-dev linux-libc-dev libboost-dev nlohmann-json3-dev libcli11-dev
  # rdma-core: uapi headers, libibverbs, and the real clients the tests run
  libibverbs-dev librdmacm-dev rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest
  # rail launcher
  libnl-3-dev libnl-route-3-dev iproute2 kmod procps iputils-ping
  # synthetic sysfs consumers (and the python3/bzip2 its tests use for fixtures)
  hwloc libhwloc-dev python3 bzip2
  # tests (runc and crun: the real OCI runtimes the agent's tests take listeners from)
  libgtest-dev libgmock-dev googletest util-linux runc crun
  # a container engine end to end: podman with the CDI spec and the runtime shim
  # (tests/oci/podman_test.sh); Docker (dockerd, containerd, containerd-shim-runc-v2) through
  # the same shim (tests/oci/docker_test.sh; on rxe devices in the VM stage: tests/vm/docker.sh)
  podman docker.io
  # Kubernetes as a kubelet drives it (tests/cri): containerd's CRI plugin (containerd comes with
  # docker.io) with Debian's CNI plugins, and the test's small CRI client (gRPC, protobuf)
  containernetworking-plugins python3-grpcio python3-protobuf protobuf-compiler
  # the DaemonSet's image (scripts/build-image.sh: a Debian base made with debootstrap); the
  # agent's metrics and alert rules checked with Prometheus' promtool
  debootstrap prometheus
  # the CDI spec schema check (tests/oci/cdi_test.sh); the Kubernetes files' parse
  # (tests/deploy/kubernetes_test.py)
  python3-jsonschema python3-yaml
  # a FUSE filesystem that hangs (the agent's stall test)
  fuse3 libfuse3-dev
  # the receivers' syscalls counted (proxy.integration.receivers_leave_and_ignore_stray_signals)
  strace
  # the shell completion's test loads the installed script through bash-completion's loader
  bash-completion
  # the multi-node harness's tests (tests/harness/*.bats); a real Slurm with munge, the SPANK
  # headers for harness/slurm, and Debian's Open MPI for the MPI ping-pong under srun
  bats slurmctld slurmd slurm-client munge libslurm-dev openmpi-bin libopenmpi-dev
  # NVIDIA decoder tests read gzip-compressed ioctl captures
  zlib1g-dev
  # Soft-RoCE VM stage (scripts/rxe-vm.sh): Debian's backports kernel with rdma_rxe booted under
  # qemu (scripts/vm/guest-kernel.sh fetches and verifies it: curl, gpgv, the archive keyring)
  qemu-system-x86 busybox-static cpio kmod jq curl gpgv xz-utils debian-archive-keyring
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup.sh: missing packages (${missing[*]}); run as root to install them" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

build_type=${BUILD_TYPE:-RelWithDebInfo}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$build_type" ${GDRPROXY_CMAKE_ARGS:-}
cmake --build build -j"$(nproc)"
