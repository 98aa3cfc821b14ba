// Checking a built (or any) sysfs tree against the invariants its consumers rely on.
//
// The idea not to miss: each check is phrased as what a consumer does and would get wrong
// (realpath fails, `subsystem` is not `pci`, the pci_bus route lands elsewhere, a bridge level is
// missing), and every violation names the tree path at fault, so a broken tree can be fixed
// without reading the checker.
#pragma once

#include <string>
#include <vector>

namespace gdrproxy::sysfs {

struct Violation {
  std::string path;  // relative to the tree root
  std::string message;
};

// `root` is the directory that would be mounted at /sys.
std::vector<Violation> verify_tree(const std::string& root);

}  // namespace gdrproxy::sysfs
