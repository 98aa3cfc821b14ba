// Reading a host's sysfs (or a captured copy of one) into a Snapshot.
//
// The idea not to miss: the canonical PCI tree is found by walking /sys/devices/pci*/ (real
// directories only), never by trusting the class or bus symlink farms; the farms are only
// cross-checked. Whatever cannot be read is not guessed: it is left out and the omission is
// recorded in Snapshot::omissions with the path that failed.
#pragma once

#include <string>

#include "sysfs/snapshot.h"

namespace gdrproxy::sysfs {

// `root` is a file-system root: sysfs is read from <root>/sys ("/" for the running host).
// Throws gdrproxy::Error if there is no usable sysfs there at all.
Snapshot capture(const std::string& root);

}  // namespace gdrproxy::sysfs
