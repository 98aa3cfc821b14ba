// The synthetic-sysfs step of `gdrproxy demo`: the example HGX H100 node, filtered for a small
// selection, as the container would see it.
#pragma once

#include <ostream>

namespace gdrproxy::demo {

// Loads the embedded example snapshot (8 GPUs, 8 RDMA NICs), builds a tree for 2 GPUs and the NIC
// closest to each into a temporary directory, verifies it, prints the GPU-NIC path types NCCL
// would derive from it next to the host's, and removes the directory. Returns 0 on success.
int example_node(std::ostream& out);

}  // namespace gdrproxy::demo
