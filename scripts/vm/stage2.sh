#!/bin/sh
# Second stage of the test VM's init, run by switch_root as PID 1 on the host's root filesystem
# (overlay over 9p). Mounts what a normal system has (devpts, shm, tracefs, bpffs, cgroup2: the
# interception engine may need the last three), runs the test script named in
# /run/vmshare/env with a hard time limit, reports its status and powers the guest off.
#
# The one idea: PID 1 must never exit (that would panic the kernel and lose the status), so the
# script runs as a child and this shell always reaches the power-off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb LANG=C
share=/run/vmshare
mkdir -p /dev/pts /dev/shm
# devtmpfs has no /dev/fd and friends; bash's process substitution needs /dev/fd.
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t devpts devpts /dev/pts
mount -t tmpfs shm /dev/shm
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
hostname rxevm

status=99
if [ -r $share/env ]; then
  set -a
  . $share/env
  set +a
  # A guest kernel that is not installed on the host brings its modules from the build tree.
  if [ -n "${GDRVM_MODULES:-}" ]; then
    kmods=/lib/modules/$(uname -r)
    mkdir -p "$kmods" && mount --bind "$GDRVM_MODULES" "$kmods" ||
      echo "GDRVM: cannot bind $GDRVM_MODULES at $kmods: modprobe will fail"
  fi
  # Both come through init.sh's mounts; if either is missing, say so rather than exit 127.
  if ! cd "${GDRVM_CWD:-/}"; then
    echo "GDRVM: cannot enter $GDRVM_CWD in the guest"
  elif [ ! -f "$GDRVM_SCRIPT" ] || [ ! -x "$GDRVM_SCRIPT" ]; then
    echo "GDRVM: $GDRVM_SCRIPT is not an executable file in the guest"
  else
    echo "GDRVM: running $GDRVM_SCRIPT (limit ${GDRVM_TIMEOUT}s)"
    # shellcheck disable=SC2086 # GDRVM_ARGS is a word list
    timeout -k 5 "$GDRVM_TIMEOUT" "$GDRVM_SCRIPT" $GDRVM_ARGS
    status=$?
    [ $status = 124 ] && echo "GDRVM: $GDRVM_SCRIPT ran past ${GDRVM_TIMEOUT}s and was killed"
  fi
else
  echo "GDRVM: no $share/env"
fi
echo $status >$share/status
sync
echo "GDRVM-STATUS: $status"
busybox poweroff -f
sleep 60
