// Stand-in device nodes for machines without RDMA NICs or GPUs (`gdrproxy demo`, and the test
// tool's `gdrproxy-testkit standin`).
// In a private mount namespace, /dev is replaced by a copy whose entries are bind mounts of the
// real ones, plus infiniband/uverbs0, nvidiactl, ... which are bind mounts of harmless real char
// devices (zero, full, random, ...). These are real char devices opened and ioctl'ed through the
// real kernel; only their identity is borrowed. The host's /dev is never modified.
#pragma once

#include <string>
#include <vector>

namespace gdrproxy::demo {

struct StandinDevice {
  std::string name;    // path below /dev, e.g. "infiniband/uverbs0"
  std::string source;  // the real char device it borrows, e.g. "/dev/zero"
};

const std::vector<StandinDevice>& standin_devices();

// Enters a new mount namespace with the stand-in /dev. Throws gdrproxy::Error on failure.
void enter_standin_dev();

}  // namespace gdrproxy::demo
