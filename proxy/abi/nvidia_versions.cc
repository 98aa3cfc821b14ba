// The NVIDIA driver releases this build knows, as a tree: each release names its parent and
// patches the parent's tables. "Do we know driver X" is a lookup in this list and nothing else;
// an unknown driver gets the newest tables for naming only (trace), never for enforcement.
//
// Every 580 release below shares one table set: the escape, UVM and nvos headers are identical
// from 580.65.06 to 580.142 in open-gpu-kernel-modules, the class and control numbers we carry
// are unchanged over that range, and gVisor's nvproxy qualifies 580.159.03, 580.159.04 and
// 580.173.02 as children of 580.126.20 without changes. A later release that does change the ABI
// is added as a child with a non-empty Patch.
#include "proxy/abi/nvidia_tables.h"

namespace gdrproxy::proxy::nvtables {

std::span<const Release> releases() {
  // Function-local so that it is built on first use, after the tables it points to.
  // clang-format off
  static const Release kReleases[] = {
      {"580.65.06", "", &tables_580()},
      {"580.76.05", "580.65.06"},
      {"580.82.07", "580.76.05"},
      {"580.82.09", "580.82.07"},
      {"580.94.02", "580.82.09"},
      {"580.94.03", "580.94.02"},
      {"580.94.06", "580.94.03"},
      {"580.94.10", "580.94.06"},
      {"580.94.11", "580.94.10"},
      {"580.94.13", "580.94.11"},
      {"580.94.16", "580.94.13"},
      {"580.94.17", "580.94.16"},
      {"580.94.18", "580.94.17"},
      {"580.95.05", "580.65.06"},
      {"580.105.08", "580.95.05"},
      {"580.119.02", "580.105.08"},
      {"580.126.09", "580.105.08"},
      {"580.126.16", "580.126.09"},
      {"580.126.18", "580.126.16"},
      {"580.126.20", "580.126.18"},
      {"580.142", "580.126.20"},
      {"580.159.03", "580.126.20"},
      {"580.159.04", "580.159.03"},
      {"580.173.02", "580.159.04"},
  };
  // clang-format on
  return kReleases;
}

}  // namespace gdrproxy::proxy::nvtables
