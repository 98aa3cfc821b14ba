// `gdrproxy cdi generate`: a Container Device Interface spec (kind gdrproxy.dev/device) for the
// host's GPUs and RDMA NICs, for engines that take devices by CDI name (podman --device,
// containerd, CRI-O). The idea not to miss: a NIC here is more than its uverbs node: its device
// carries the createRuntime and poststop hooks that move its RoCE rail (the netdev) into the
// container with the ARP profile and give it back, which no other CDI generator offers. CDI
// cannot set a seccomp listener: pair these devices with `gdrproxy runtime` or with a profile
// from `gdrproxy oci seccomp`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace gdrproxy::proxy {

inline constexpr const char* kCdiKind = "gdrproxy.dev/device";

struct CdiOptions {
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";  // /proc/driver/nvidia/gpus/<bdf>/information
  std::string cdi_version = "1.1.0";
  std::string rail_profile = "multirail";
  std::string gdrproxy_path;       // the hooks' executable; "" = this one
  bool allow_plain_rails = false;  // the hooks move rails that back no RDMA device (test rigs)
  // Each GPU also carries the loaded driver's user-mode libraries and tools (nvidia_user_files.h)
  // found under driver_root, so that an image without them runs CUDA.
  bool driver_files = true;
  std::string driver_root = "/";
};

// Devices: gpu<minor> and the GPU's UUID for each NVIDIA GPU (its node plus nvidiactl and the
// UVM nodes, and the driver's libraries and tools as read-only mounts), the ibdev name for each
// RDMA device with a uverbs node (uverbsN, rdma_cm, and for a RoCE port the rail hooks), and "all".
// Throws gdrproxy::Error when a requested CDI version is older than the fields used need.
nlohmann::json generate_cdi_spec(const CdiOptions& options);

}  // namespace gdrproxy::proxy
