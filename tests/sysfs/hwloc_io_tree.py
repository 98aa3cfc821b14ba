#!/usr/bin/env python3
"""Prints the I/O part of an hwloc XML topology (from `lstopo --of xml --whole-io`) as text.

One line per host bridge, PCI bridge, PCI device and OS device, indented by depth, with the
attributes hwloc derived from sysfs (busid, class/vendor/device ids, bridge bus range, link speed,
OS device type and infos). With --keep BDF,... only PCI objects whose busid is listed (and their OS
devices) are printed, and host bridges with nothing kept below them are dropped; with
--keep-osdev NAME,... only those OS devices are printed: the source tree restricted to a
selection. OS devices that hang off no PCI device (pmem, dax, block devices of other buses) are
outside what a synthetic PCI tree carries and are never printed. Two trees are equal for hwloc
when these texts are equal.
"""
import argparse
import sys
import xml.etree.ElementTree as ET

IO_TYPES = {"Bridge", "PCIDev", "OSDev"}


def busid(o):
    return o.get("pci_busid") or ""


def describe(o):
    t = o.get("type")
    if t == "OSDev":
        infos = ",".join("%s=%s" % (i.get("name"), i.get("value")) for i in o.findall("info"))
        return "OSDev %s subtype=%s osdev_type=%s %s" % (o.get("name"), o.get("subtype"),
                                                         o.get("osdev_type"), infos)
    parts = [t]
    attrs = ["pci_busid", "pci_type", "pci_link_speed", "bridge_type", "depth", "bridge_pci"]
    if o.get("bridge_type", "").startswith("0-"):
        # A host bridge is hwloc's own object; its bus range is the union of the root ports kept
        # below it, so it legitimately shrinks with the selection.
        attrs.remove("bridge_pci")
    for a in attrs:
        if o.get(a) is not None:
            parts.append("%s=%s" % (a, o.get(a)))
    return " ".join(parts)


def emit(o, depth, keep, keep_osdev):
    """Returns the lines of `o`'s subtree, or [] if nothing in it is kept."""
    t = o.get("type")
    children = [c for c in o.findall("object") if c.get("type") in IO_TYPES]
    lines = []
    for c in children:
        lines += emit(c, depth + 1, keep, keep_osdev)
    if t == "OSDev":
        if depth == 0 or (keep_osdev is not None and o.get("name") not in keep_osdev):
            return []
        return ["  " * depth + describe(o)]
    is_host_bridge = t == "Bridge" and o.get("bridge_type", "").startswith("0-")
    if keep is not None and not is_host_bridge and busid(o) not in keep:
        return []
    if keep is not None and is_host_bridge and not lines:
        return []
    return ["  " * depth + describe(o)] + lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("xml")
    ap.add_argument("--keep", help="comma-separated BDFs to keep")
    ap.add_argument("--keep-osdev", help="comma-separated OS device names to keep")
    a = ap.parse_args()
    keep = None if a.keep is None else {k for k in a.keep.split(",") if k}
    keep_osdev = None if a.keep_osdev is None else {k for k in a.keep_osdev.split(",") if k}
    root = ET.parse(a.xml).getroot()
    out = []
    # I/O objects hang below non-I/O parents (Machine, Package, NUMA...): start at each topmost.
    def walk(o):
        for c in o.findall("object"):
            if c.get("type") in IO_TYPES:
                out.extend(emit(c, 0, keep, keep_osdev))
            else:
                walk(c)
    walk(root)
    sys.stdout.write("\n".join(out) + ("\n" if out else ""))


if __name__ == "__main__":
    main()
