#!/usr/bin/env python3
"""Prints, from a source sysfs, the PCI functions a tree exposing the given devices must contain.

Computed independently of gdrproxy, from the rules consumers impose: each exposed function, every
ancestor on its canonical /sys/devices path, function 0 of the same device, and for a function
carrying an RDMA device also device 00 function 0 (NCCL looks NICs up that way); SR-IOV VFs bring
their PF. Also prints the OS device names hwloc should show (RDMA devices and their interfaces).
usage: expected_closure.py SYSDIR GPU_BDFS RDMA_DEVS NETDEVS   (comma separated lists)
"""
import os
import re
import sys

BDF = re.compile(r"^[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


def ancestors(sysdir, bdf):
    link = os.path.join(sysdir, "bus/pci/devices", bdf)
    if not os.path.exists(link):
        return set()
    return {c for c in os.path.realpath(link).split("/") if BDF.match(c)}


def main():
    sysdir, gpus, rdma, nets = sys.argv[1], *[[x for x in a.split(",") if x] for a in sys.argv[2:5]]
    functions, osdevs = set(), set()
    endpoints = [(g, False) for g in gpus]
    for d in rdma:
        fn = os.path.basename(os.path.realpath(os.path.join(sysdir, "class/infiniband", d, "device")))
        endpoints.append((fn, True))
        osdevs.add(d)
        netdir = os.path.join(sysdir, "class/infiniband", d, "device/net")
        if os.path.isdir(netdir):
            osdevs.update(os.listdir(netdir))
    for n in nets:
        dev = os.path.realpath(os.path.join(sysdir, "class/net", n, "device"))
        fn = [c for c in dev.split("/") if BDF.match(c)][-1]
        endpoints.append((fn, False))
        osdevs.add(n)
    for fn, is_rdma in endpoints:
        related = [fn, fn[:-1] + "0"]
        if is_rdma:
            related.append(fn[:-4] + "00.0")
        physfn = os.path.join(sysdir, "bus/pci/devices", fn, "physfn")
        if os.path.islink(physfn):
            related.append(os.path.basename(os.readlink(physfn)))
        for r in related:
            functions |= ancestors(sysdir, r)
    print(",".join(sorted(functions)))
    print(",".join(sorted(osdevs)))


if __name__ == "__main__":
    main()
