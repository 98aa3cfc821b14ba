// GPUDirect through dma-buf: a uverbs REG_DMABUF_MR names an fd the caller holds. gdrproxy lets
// it through only when that fd is a dma-buf whose exporter is allowed (by default the NVIDIA
// driver's "nv_dmabuf"); every GPU reachable from the sandbox is a granted one (the broker saw to
// that), so an NVIDIA dma-buf in the caller's hands was exported by a granted GPU. The fd is
// inspected through /proc/<pid>/fd and /proc/<pid>/fdinfo, which needs no pidfd_getfd (blocked
// by several container engines' seccomp profiles) and no copy of the fd. fd = -1 is NCCL's
// capability probe and always passes.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "proxy/gpudirect/dmabuf_verdict.h"

namespace gdrproxy::proxy {

DmabufVerdict check_dmabuf_fd(pid_t tid, int fd, const std::vector<std::string>& exporters,
                              const std::string& proc_root = "/proc");

}  // namespace gdrproxy::proxy
