// The example node's snapshot (configs/examples/hgx-h100-8gpu-8nic.snapshot.json: 8 GPUs and 8
// RDMA NICs of an HGX H100), embedded at build time so that the demo needs no file beside the
// binary; the sysfs and doctor tests build their trees from it too.
#pragma once

#include <string>

namespace gdrproxy::demo {

const std::string& example_snapshot_json();

}  // namespace gdrproxy::demo
