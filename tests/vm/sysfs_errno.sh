#!/usr/bin/env bash
# shellcheck disable=SC2154 # build, work, gdrproxy, repo: set by lib.sh
# Synthetic sysfs reads that the host's kernel refuses (sourced by tests/vm/run-tests.sh, or run
# alone as the guest script: scripts/rxe-vm.sh tests/vm/sysfs_errno.sh):
#   sysfs-refused-reads: a tenant reading, through its synthetic /sys with the mount plan applied,
#     a down rail's speed (the guest kernel says EINVAL) and the type of an empty GID slot of a
#     real rxe port (ENODATA since Linux 5.10) gets the kernel's own errno from read(), as the
#     host's reader does: never ENOENT, never an empty file; the snapshot records which errno.
#
# The one idea: the guest's devices are software ones (a dummy netdev, rxe) that hang off no PCI
# function, so they cannot be placed in a synthetic tree themselves; the check lays the guest
# kernel's own files into a PCI-shaped host (the constructed hgx-roce16 fixture, rdma1/mlx5_1 on
# 0000:0c:00.1) by bind mounts, in a private mount namespace, and every errno compared is the
# real kernel's, read through gdrproxy's snapshot, build, mount plan and `sysfs mount`.
standalone=0
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  standalone=1
  set -uo pipefail
  # shellcheck source=tests/vm/lib.sh
  . "$(cd "$(dirname "$0")" && pwd)/lib.sh"
  : >"$summary"
  for m in rdma_rxe ib_uverbs dummy; do timeout 60 modprobe $m || log "modprobe $m failed"; done
fi

se_t0=$(now_ms)
se_problems=()
se_w=$work/sysfs-errno
rm -rf "$se_w"
mkdir -p "$se_w"
# outcome PATH: what read() of PATH says: data:<first line>, open:<ERRNO> or read:<ERRNO>.
se_reader='import errno, os, sys
for p in sys.argv[1:]:
    try:
        fd = os.open(p, os.O_RDONLY)
    except OSError as e:
        print("open:" + errno.errorcode.get(e.errno, str(e.errno))); continue
    try:
        d = os.read(fd, 4096)
        print("data:" + d.decode(errors="replace").split("\n")[0])
    except OSError as e:
        print("read:" + errno.errorcode.get(e.errno, str(e.errno)))
    os.close(fd)'

# The guest's refusing files: a dummy netdev left down, and an rxe device on it, whose GID table
# then has empty slots.
ip link add sysfsvm0 type dummy 2>/dev/null || se_problems+=("cannot add the dummy netdev sysfsvm0")
ip link set sysfsvm0 down
timeout 30 rdma link add rxesys0 type rxe netdev sysfsvm0 || se_problems+=("cannot add rxesys0 on sysfsvm0")
se_kspeed=/sys/class/net/sysfsvm0/speed
se_kport=/sys/class/infiniband/rxesys0/ports/1
se_slot=
for ((i = 0; i < 16; i++)); do
  [[ $(cat "$se_kport/gids/$i" 2>/dev/null) == 0000:0000:0000:0000:0000:0000:0000:0000 ]] && { se_slot=$i; break; }
done
[[ -n $se_slot ]] || se_problems+=("rxesys0 has no empty GID slot among the first 16")
se_slot=${se_slot:-15}
read -r se_host_speed se_host_type < <(python3 -c "$se_reader" "$se_kspeed" "$se_kport/gid_attrs/types/$se_slot" | tr '\n' ' ')
log "sysfs-errno: host reads: sysfsvm0 speed $se_host_speed, rxesys0 gid_attrs/types/$se_slot $se_host_type"
[[ $se_host_speed == read:* && $se_host_type == read:* ]] ||
  se_problems+=("the guest kernel read the files (speed $se_host_speed, type $se_host_type): nothing refused to check")

# The PCI-shaped host, with the kernel's files laid in: speed and one GID slot for the capture,
# then (for the plan's live port bind) the whole real port directory.
"$repo/tests/sysfs/prepare_fixture.sh" hgx-roce16 "$se_w/host" >/dev/null 2>&1 || se_problems+=("cannot prepare the hgx-roce16 fixture")
se_fn=$se_w/host/sys/devices/pci0000:07/0000:07:01.0/0000:08:00.0/0000:09:00.0/0000:0a:00.0/0000:0b:00.0/0000:0c:00.1
cat >"$se_w/steps.sh" <<EOF
set -eu
mount --make-rprivate /
mount --bind $se_kspeed $se_fn/net/rdma1/speed
mount --bind $se_kport/gid_attrs/types/$se_slot $se_fn/infiniband/mlx5_1/ports/1/gid_attrs/types/$se_slot
$gdrproxy sysfs snapshot --root $se_w/host -o $se_w/snapshot.json 2>$se_w/snapshot.log
umount $se_fn/infiniband/mlx5_1/ports/1/gid_attrs/types/$se_slot
mount --bind $se_kport $se_fn/infiniband/mlx5_1/ports/1
$gdrproxy sysfs build --snapshot $se_w/snapshot.json --out $se_w/tree --nics mlx5_1 --gpus none --live-ports >$se_w/build.log 2>&1
$gdrproxy sysfs mount-plan --snapshot $se_w/snapshot.json --tree $se_w/tree --nics mlx5_1 --gpus none --host-root $se_w/host >$se_w/plan.json
# The tenant: its /sys is the tree, with the plan's live binds.
$gdrproxy sysfs mount --plan $se_w/plan.json --at /sys
python3 -c '$se_reader' /sys/class/net/rdma1/speed /sys/class/infiniband/mlx5_1/ports/1/gid_attrs/types/$se_slot /sys/class/net/rdma1/mtu >$se_w/tenant.txt
EOF
if ((${#se_problems[@]} == 0)); then
  timeout 120 unshare -m bash "$se_w/steps.sh" >"$se_w/steps.log" 2>&1 || se_problems+=("the tenant's steps failed: $(tail -1 "$se_w/steps.log")")
fi
if [[ -s $se_w/snapshot.json ]]; then
  se_rec_speed=$(jq -r '.net[] | select(.name == "rdma1") | .refused.speed // "none"' "$se_w/snapshot.json")
  se_rec_type=$(jq -r --arg i "$se_slot" '.infiniband[] | select(.name == "mlx5_1") | .ports[0].gid_types_refused[$i] // "none"' "$se_w/snapshot.json")
  [[ read:$se_rec_speed == "$se_host_speed" ]] || se_problems+=("the snapshot records speed as $se_rec_speed, the kernel said $se_host_speed")
  [[ read:$se_rec_type == "$se_host_type" ]] || se_problems+=("the snapshot records GID type $se_slot as $se_rec_type, the kernel said $se_host_type")
fi
if [[ -s $se_w/tenant.txt ]]; then
  mapfile -t se_tenant <"$se_w/tenant.txt"
  [[ ${se_tenant[0]} == "$se_host_speed" ]] || se_problems+=("tenant's rdma1 speed: ${se_tenant[0]}, host's: $se_host_speed")
  [[ ${se_tenant[1]} == "$se_host_type" ]] || se_problems+=("tenant's empty GID slot type: ${se_tenant[1]}, host's: $se_host_type")
  [[ ${se_tenant[2]} == data:* ]] || se_problems+=("tenant's rdma1 mtu (a static value): ${se_tenant[2]}")
elif ((${#se_problems[@]} == 0)); then
  se_problems+=("the tenant read nothing")
fi
if ((${#se_problems[@]} == 0)); then
  record sysfs-refused-reads PASS $(($(now_ms) - se_t0)) "tenant and host alike: speed of a down rail $se_host_speed, empty GID slot $se_slot's type $se_host_type"
else
  for f in steps.log snapshot.log build.log; do [[ -s $se_w/$f ]] && show "$se_w/$f" "sysfs-errno $f"; done
  record sysfs-refused-reads FAIL $(($(now_ms) - se_t0)) "$(IFS='; '; echo "${se_problems[*]}")"
fi
timeout 30 rdma link delete rxesys0 2>/dev/null
ip link delete sysfsvm0 2>/dev/null

if ((standalone)); then
  log "================ summary ================"
  sed 's/^/VMTEST: /' "$summary"
  exit "$failures"
fi
