// The host NVIDIA driver's user-mode files a CUDA container needs and its image does not carry:
// the libraries of exactly the loaded kernel module's version (libcuda.so.V, libnvidia-ml.so.V,
// libnvidia-ptxjitcompiler.so.V, ...) with the names the loader asks for (the host's soname
// links to them, libcuda.so.1), and the tools of the driver (nvidia-smi, ...). The one idea: a
// library is the driver's when its file name ends in the module's version, so a CUDA toolkit
// or another release's leftovers are never picked; each is bound read-only at the path it has on
// the host, and once more under each soname link name, so the container's loader finds it in
// the standard directories without an ld.so.cache of its own.
#pragma once

#include <string>
#include <vector>

namespace gdrproxy::proxy {

struct DriverFileMount {
  std::string host_path;       // the file itself (links resolved)
  std::string container_path;  // where the container sees it
};

// `root` is where the host's filesystem is ("/"; test rigs: a constructed one), `version` the
// loaded module's ("580.159.04"). Sorted by container path; empty when nothing matches.
std::vector<DriverFileMount> nvidia_user_files(const std::string& root, const std::string& version);

}  // namespace gdrproxy::proxy
