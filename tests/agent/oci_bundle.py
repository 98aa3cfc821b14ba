#!/usr/bin/env python3
"""The config.json of a real runc/crun container for the agent's tests, in one place.

The idea not to miss: every such container is the same small thing (the test's read-only rootfs
with the host's /usr and /etc bound read-only over it, a fresh /dev tmpfs holding only the
stand-in nodes it is given, its own namespaces, root without new privileges), served by the agent
through the seccomp profile `gdrproxy oci seccomp` wrote; a test says only what differs.

  oci_bundle.py CONFIG --id NAME --seccomp PROFILE [--device PATH]... [--cgroup-allow]
                [--bind DIR]... [--bind-rw SRC:DST]... [--pidns PATH] [--docker-caps] -- ARGS...
  oci_bundle.py --allow-all-base FILE
      writes a Docker-format base profile that allows every x86-64 syscall by name (and nothing
      else: SCMP_ACT_ERRNO by default), as an engine's permissive profile would.
"""
import argparse
import json
import os
import re
import sys

# Docker's default capabilities (moby's oci/caps/defaults.go).
DOCKER_CAPS = ["CAP_" + c for c in (
    "CHOWN DAC_OVERRIDE FSETID FOWNER MKNOD NET_RAW SETGID SETUID SETFCAP SETPCAP "
    "NET_BIND_SERVICE SYS_CHROOT KILL AUDIT_WRITE").split()]


def allow_all_base(path):
    header = "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"
    names = sorted(set(re.findall(r"#define __NR_(\w+) ", open(header).read())))
    json.dump({"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
               "archMap": [{"architecture": "SCMP_ARCH_X86_64",
                            "subArchitectures": ["SCMP_ARCH_X86"]}],
               "syscalls": [{"names": names, "action": "SCMP_ACT_ALLOW"}]}, open(path, "w"))


def bind(src, dst, mode):
    return {"destination": dst, "type": "bind", "source": src, "options": ["rbind", mode]}


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--allow-all-base":
        allow_all_base(sys.argv[2])
        return
    p = argparse.ArgumentParser()
    p.add_argument("config")
    p.add_argument("--id", required=True)
    p.add_argument("--seccomp", required=True)
    p.add_argument("--device", action="append", default=[])
    p.add_argument("--cgroup-allow", action="store_true",
                   help="device cgroup: deny all, then allow each --device")
    p.add_argument("--bind", action="append", default=[], help="a host directory, read-only")
    p.add_argument("--bind-rw", action="append", default=[], help="SRC:DST, read-write")
    p.add_argument("--pidns", default="", help="join this pid namespace instead of a new one")
    p.add_argument("--docker-caps", action="store_true")
    p.add_argument("args", nargs="+")
    a = p.parse_args()
    nodes = [(path, os.stat(path).st_rdev) for path in a.device]
    process = {"terminal": False, "user": {"uid": 0, "gid": 0}, "cwd": "/", "args": a.args,
               "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], "noNewPrivileges": True}
    if a.docker_caps:
        process["capabilities"] = {k: DOCKER_CAPS for k in ("bounding", "effective", "permitted")}
    mounts = [{"destination": "/proc", "type": "proc", "source": "proc"},
              {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
               "options": ["nosuid", "mode=755"]},
              {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid"]},
              bind("/usr", "/usr", "ro"), bind("/etc", "/etc", "ro")]
    mounts += [bind(d, d, "ro") for d in a.bind]
    mounts += [bind(*s.split(":", 1), "rw") for s in a.bind_rw]
    linux = {
        "namespaces": [{"type": t} for t in ("mount", "ipc", "uts", "network")] +
                      [{"type": "pid", "path": a.pidns} if a.pidns else {"type": "pid"}],
        "devices": [{"path": path, "type": "c", "major": os.major(d), "minor": os.minor(d),
                     "fileMode": 0o666, "uid": 0, "gid": 0} for path, d in nodes],
        "seccomp": json.load(open(a.seccomp)),
    }
    if a.cgroup_allow:
        linux["resources"] = {"devices": [{"allow": False, "access": "rwm"}] + [
            {"allow": True, "type": "c", "major": os.major(d), "minor": os.minor(d),
             "access": "rw"} for _, d in nodes]}
    json.dump({"ociVersion": "1.0.2", "process": process,
               "root": {"path": "rootfs", "readonly": True}, "hostname": a.id,
               "mounts": mounts, "linux": linux}, open(a.config, "w"), indent=1)


main()
