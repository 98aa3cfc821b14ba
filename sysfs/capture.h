// Reading a host's sysfs (or a captured copy of one) into a Snapshot.
//
// The idea not to miss: the canonical PCI tree is found by walking /sys/devices/pci*/ (real
// directories only), never by trusting the class or bus symlink farms; the farms are only
// cross-checked. Whatever cannot be read is not guessed: it is left out and the omission is
// recorded in Snapshot::omissions with the path that failed. A file the kernel refuses to read
// (its open() or read() fails; an absent file is not one) is not an omission but an answer: it
// is recorded with its errno (`refused`), which the built tree reproduces.
#pragma once

#include <string>
#include <vector>

#include "sysfs/snapshot.h"

namespace gdrproxy::sysfs {

struct CaptureOptions {
  // Read every RDMA port's GID and P_Key tables. A container's tree binds its ports' live host
  // directories over the copies (BuildOptions::live_ports), so it never uses them; left unread,
  // a 16-NIC host's capture opens about 1,000 files instead of 13,000.
  bool port_tables = true;
  // When either list is non-empty, only these devices are read, with the PCI functions above
  // them: uverbs nodes by name ("uverbs3") and PCI functions by BDF. What is not on their paths
  // is simply not in the snapshot (not an omission); a name the host does not have adds nothing.
  // A container's tree needs no more, and reading every function's config space costs a trapped
  // access per dword on a VM.
  std::vector<std::string> only_uverbs;
  std::vector<std::string> only_pci;
};

// `root` is a file-system root: sysfs is read from <root>/sys ("/" for the running host).
// Throws gdrproxy::Error if there is no usable sysfs there at all.
Snapshot capture(const std::string& root, const CaptureOptions& options = {});

}  // namespace gdrproxy::sysfs
