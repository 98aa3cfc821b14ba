#!/usr/bin/env bash
# Builds the node image deploy/kubernetes/*.yaml name (gdrproxy:latest): a Debian bookworm base
# made here with debootstrap (no registry is needed, only Debian's mirror), holding the shared
# libraries the built binary links, with the project's install layout on top (`cmake --install
# --strip` of the build, prefix /usr/local: /usr/local/bin/gdrproxy, its gdrproxy-runtime link,
# /etc/gdrproxy/*.json, ...). The idea not to miss: the base's package list is derived from the
# binary's NEEDED libraries and recorded as a label on the base image; a base whose label matches
# is reused (seconds), any other is rebuilt (minutes), so the base never silently lacks a library.
#   scripts/build-image.sh [--build-dir DIR] [--tag TAG] [--rebuild-base] [--mirror URL]
# The dockerd is the one DOCKER_HOST names (the docker CLI's default otherwise); DOCKER names the
# docker CLI (default: docker in PATH). Needs root for debootstrap when the base is (re)built.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build tag=gdrproxy:latest rebuild_base=0 mirror=http://deb.debian.org/debian
base=gdrproxy-base:bookworm label=org.gdrproxy.base-packages

usage() {
  cat <<EOF
Usage: scripts/build-image.sh [OPTIONS]
Builds the gdrproxy node image (Dockerfile: deploy/image/Dockerfile) into the dockerd that
DOCKER_HOST names, from the build directory's binaries.
  --build-dir DIR   the CMake build directory to install from (default: $src/build)
  --tag TAG         the image's name (default: gdrproxy:latest, what deploy/kubernetes names)
  --rebuild-base    debootstrap $base again even if that dockerd has a matching one
  --mirror URL      the Debian mirror debootstrap reads (default: $mirror)
  -h, --help        this text
The base ($base) is debootstrap --variant=minbase bookworm with the packages that hold the
libraries the binary links; it is reused while they stay the same.
Load the image into a node's containerd:
  docker save $tag | ctr -n k8s.io images import -
EOF
}

while (($#)); do
  case $1 in
    --build-dir) build=$(realpath "$2"); shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --rebuild-base) rebuild_base=1; shift ;;
    --mirror) mirror=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "build-image.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
docker=${DOCKER:-docker}
# The Dockerfile is two COPY steps and a check: the classic builder does it with any dockerd and
# needs no buildx plugin.
export DOCKER_BUILDKIT=${DOCKER_BUILDKIT:-0}
die() { echo "build-image.sh: $*" >&2; exit 1; }
[[ -x $build/gdrproxy ]] || die "no $build/gdrproxy: build the project first (cmake --build build)"
"$docker" version >/dev/null || die "no dockerd answers (DOCKER_HOST=${DOCKER_HOST:-unset})"

# The Debian packages that hold the libraries the binary links (ld.so's answer on this Debian
# bookworm build machine), sorted, comma-separated: debootstrap's --include.
packages() {
  local lib path
  for lib in $(objdump -p "$build/gdrproxy" | awk '$1 == "NEEDED" {print $2}'); do
    # "libX => /path (addr)", or the loader's own line, "/path/ld-linux-x86-64.so.2 (addr)"
    # (NEEDED where the binary carries libstdc++).
    path=$(ldd "$build/gdrproxy" | awk -v l="$lib" '$1 == l && $2 == "=>" {print $3; exit}
      $2 != "=>" && $1 ~ /^\// && (n = split($1, p, "/")) && p[n] == l {print $1; exit}')
    [[ -n $path ]] || die "ldd finds no $lib for $build/gdrproxy"
    dpkg-query -S "$(realpath "$path")" 2>/dev/null || dpkg-query -S "$path" ||
      die "no Debian package holds $path"
  done | sed 's/:.*//' | sort -u | paste -sd,
}
want=$(packages)

scratch=$(mktemp -d "${TMPDIR:-/tmp}/gdrproxy-image.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
t0=$SECONDS
have=$("$docker" image inspect --format "{{index .Config.Labels \"$label\"}}" "$base" 2>/dev/null || true)
if ((rebuild_base)) || [[ $have != "$want" ]]; then
  command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
  [[ $EUID == 0 ]] || die "debootstrap needs root"
  echo "build-image.sh: debootstrap bookworm ($mirror) with $want"
  root=$scratch/rootfs
  debootstrap --variant=minbase --include="$want" bookworm "$root" "$mirror" >"$scratch/debootstrap.log" 2>&1 ||
    { tail -20 "$scratch/debootstrap.log" >&2; die "debootstrap failed"; }
  # Lean: no package archives, indexes, docs, manuals or locales in the image.
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* \
    "$root"/usr/share/man/* "$root"/usr/share/locale/* "$root"/var/log/*.log
  tar -C "$root" -c . | "$docker" import --change "LABEL $label=$want" - "$base" >/dev/null ||
    die "docker import of the base failed"
  echo "build-image.sh: $base built in $((SECONDS - t0)) s"
else
  echo "build-image.sh: $base is current (packages: $want)"
fi

# The installed layout, stripped, as the build places it under prefix /usr/local.
t1=$SECONDS
stage=$scratch/stage
DESTDIR=$stage cmake --install "$build" --prefix /usr/local --strip >"$scratch/install.log" 2>&1 ||
  { cat "$scratch/install.log" >&2; die "cmake --install failed"; }
"$docker" build --network none -q -f "$src/deploy/image/Dockerfile" -t "$tag" "$stage" >/dev/null ||
  die "docker build failed"
echo "build-image.sh: $tag built in $((SECONDS - t1)) s"
