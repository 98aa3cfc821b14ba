// The CUDA side of GPUDirect over dma-buf, driven through the CUDA Driver API loaded at run time
// (dlopen of libcuda.so.1), so the binary builds and runs on hosts without CUDA.
#pragma once

#include <ostream>
#include <string>

namespace gdrproxy::testkit {

// cuInit, a context on GPU 0, cuMemAlloc of 2 MiB, export as a dma-buf fd, then MR.REG_DMABUF_MR
// on `nic` (if it can be opened) with that fd, with a memfd and with -1. Prints one "key value"
// line per fact. Returns 0 on success, 2 when libcuda.so.1 or a GPU is unavailable, 1 on failure.
int exercise_cuda_dmabuf(const std::string& nic, std::ostream& out);

}  // namespace gdrproxy::testkit
