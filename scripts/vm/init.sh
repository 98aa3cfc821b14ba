#!/bin/sh
# /init of the Soft-RoCE test VM (busybox sh, runs as PID 1 from the initramfs).
#
# Puts this guest on the host's root filesystem: virtio-9p share "hostroot" read-only as the
# lower layer, a tmpfs as the upper layer of an overlay, so the guest can write anywhere without
# touching the host. The writable 9p share "vmshare" carries the run's settings in (env) and
# results out. The checkout (and the build tree or the guest script's directory where those lie
# elsewhere) are 9p shares of their own, listed in vmshare/mounts and mounted, the same way, after
# the fresh /tmp and /run, so a checkout under /tmp is not hidden. Then switch_root runs
# /stage2.sh, which runs the test script and powers off.
#
# The one idea: every failure path still ends in "GDRVM-STATUS: N" on the console and a power-off,
# so the host never waits for a guest that cannot report.
export PATH=/bin
busybox mount -t proc proc /proc
busybox mount -t sysfs sysfs /sys
busybox mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
for a in $(busybox --list); do [ -e /bin/$a ] || busybox ln -s busybox /bin/$a; done

die() {
  echo "GDRVM: init: $*"
  echo "GDRVM-STATUS: 99"
  sync
  poweroff -f
  sleep 60
}

echo "GDRVM: initramfs up at $(cut -d' ' -f1 /proc/uptime)s"
for m in $(cat /modules/load-order); do
  insmod /modules/$m || die "insmod $m failed"
done

p9="trans=virtio,version=9p2000.L,msize=262144"
mount -t 9p -o "$p9,ro,cache=loose" hostroot /lower || die "cannot mount the host root (9p tag hostroot)"
mount -t tmpfs -o mode=0755 upper /upper || die "tmpfs for the overlay"
mkdir -p /upper/data /upper/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/upper/data,workdir=/upper/work /newroot \
  || die "overlay of tmpfs on the 9p root"

# Fresh /run and /tmp: the host's contents of those are not this guest's business.
mount -t tmpfs -o mode=0755 run /newroot/run || die "tmpfs /run"
mount -t tmpfs -o mode=1777 tmp /newroot/tmp || die "tmpfs /tmp"
mkdir -p /newroot/run/vmshare
mount -t 9p -o "$p9,cache=none" vmshare /newroot/run/vmshare || die "cannot mount the result share (9p tag vmshare)"
# "TAG PATH" lines, parents first (scripts/rxe-vm.sh checked that no PATH has spaces).
n=0
while read -r tag path; do
  n=$((n + 1))
  mkdir -p /shares/$n /upper/shares/$n/data /upper/shares/$n/work "/newroot$path" || die "mkdir for $path"
  mount -t 9p -o "$p9,ro,cache=loose" "$tag" /shares/$n || die "cannot mount $path (9p tag $tag)"
  mount -t overlay overlay -o lowerdir=/shares/$n,upperdir=/upper/shares/$n/data,workdir=/upper/shares/$n/work \
    "/newroot$path" || die "overlay of tmpfs on $path (9p tag $tag)"
done </newroot/run/vmshare/mounts
cp /stage2.sh /newroot/run/stage2.sh

mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
mount --move /dev /newroot/dev
echo "GDRVM: host root ready at $(cut -d' ' -f1 /newroot/proc/uptime)s"
exec switch_root /newroot /bin/sh /run/stage2.sh
die "switch_root failed"
