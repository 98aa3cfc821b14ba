#!/usr/bin/env bash
# Builds the initramfs of the Soft-RoCE test VM: a static busybox, the handful of kernel modules
# the guest needs to reach this machine's root filesystem over virtio-9p (plus overlayfs), and
# scripts/vm/init.sh as /init.
#
# The one idea: the initramfs only has to get the guest onto the host's root. Everything else
# (rdma_rxe, ib_uverbs, the rdma-core tools, the project's build tree) is read from there, so the
# image stays about 1.5 MB and is rebuilt in well under a second on every run.
#
# Usage: build-initramfs.sh OUT.cpio.gz KVER [MODROOT]   (modules under MODROOT/lib/modules/KVER;
# default /, the kernels installed here)
set -euo pipefail
out=${1:?usage: build-initramfs.sh OUT.cpio.gz KVER [MODROOT]}
kver=${2:?usage: build-initramfs.sh OUT.cpio.gz KVER [MODROOT]}
modroot=${3:-/}
here=$(cd "$(dirname "$0")" && pwd)
busybox=${BUSYBOX:-/bin/busybox}

# A dynamically linked busybox would find no libc in the initramfs.
[[ -x $busybox ]] || { echo "build-initramfs: $busybox missing; install busybox-static" >&2; exit 1; }
if ldd "$busybox" >/dev/null 2>&1; then
  echo "build-initramfs: $busybox is dynamically linked; install busybox-static" >&2
  exit 1
fi

stage=$(mktemp -d "${TMPDIR:-/tmp}/gdrproxy-initramfs.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,dev,proc,sys,run,newroot,lower,upper,modules}
cp "$busybox" "$stage/bin/busybox"
ln -s busybox "$stage/bin/sh"

# Load order from the target kernel's own modules.dep: `modprobe --show-depends` prints one
# "insmod PATH" line per module, dependencies first (built-ins print "builtin NAME").
: >"$stage/modules/load-order"
declare -A have=()
for mod in virtio_pci 9pnet_virtio 9p overlay; do
  while read -r verb path _; do
    [[ $verb == insmod ]] || continue
    name=$(basename "$path")
    [[ -n ${have[$name]:-} ]] && continue
    have[$name]=1
    case $name in
      *.ko) cp "$path" "$stage/modules/$name" ;;
      *.ko.xz) xz -dc "$path" >"$stage/modules/${name%.xz}"; name=${name%.xz} ;;
      *.ko.zst) zstd -qdc "$path" >"$stage/modules/${name%.zst}"; name=${name%.zst} ;;
      *) echo "build-initramfs: unexpected module file $path" >&2; exit 1 ;;
    esac
    echo "$name" >>"$stage/modules/load-order"
  done < <(modprobe -d "$modroot" -S "$kver" --show-depends "$mod")
done
# A kernel may have all four built in; then the list is empty but must exist.
modprobe -d "$modroot" -S "$kver" --show-depends 9p >/dev/null ||
  { echo "build-initramfs: kernel $kver has no 9p file system" >&2; exit 1; }

install -m 0755 "$here/init.sh" "$stage/init"
install -m 0755 "$here/stage2.sh" "$stage/stage2.sh"
# The kernel opens /dev/console before /init runs; without the node init starts with no stdio.
# (init.sh also reopens the console on devtmpfs, so an unprivileged build still boots.)
mknod -m 600 "$stage/dev/console" c 5 1 2>/dev/null || true
(cd "$stage" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$out"
echo "build-initramfs: $out for $kver with $(wc -l <"$stage/modules/load-order") modules" >&2
