#include "tests/testkit/cuda_dmabuf.h"

#include "demo/verbs_request.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "base/unique_fd.h"
#include "proxy/abi/errno_names.h"

#if __has_include(<cuda.h>)
#include <cuda.h>
#else
// The few Driver API types and constants used here, for builds without the CUDA toolkit.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
constexpr int CUDA_SUCCESS = 0;
constexpr int CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 124;
constexpr int CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1;
#endif

namespace gdrproxy::testkit {
namespace {

using demo::reg_dmabuf_mr;
using proxy::errno_name;

// Driver API entry points, resolved from libcuda.so.1 by their ABI-versioned symbol names.
struct CudaApi {
  void* lib = nullptr;
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_attribute)(int*, int, CUdevice) = nullptr;
  CUresult (*ctx_create)(CUcontext*, unsigned, CUdevice) = nullptr;
  CUresult (*ctx_destroy)(CUcontext) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*range_handle)(void*, CUdeviceptr, size_t, int, unsigned long long) = nullptr;
  CUresult (*error_name)(CUresult, const char**) = nullptr;

  bool load(std::string& why) {
    lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      why = ::dlerror();
      return false;
    }
    return sym(init, "cuInit", why) && sym(device_get, "cuDeviceGet", why) &&
           sym(device_attribute, "cuDeviceGetAttribute", why) &&
           sym(ctx_create, "cuCtxCreate_v2", why) && sym(ctx_destroy, "cuCtxDestroy_v2", why) &&
           sym(mem_alloc, "cuMemAlloc_v2", why) && sym(mem_free, "cuMemFree_v2", why) &&
           sym(range_handle, "cuMemGetHandleForAddressRange", why) &&
           sym(error_name, "cuGetErrorName", why);
  }
  template <typename F>
  bool sym(F& f, const char* name, std::string& why) {
    f = reinterpret_cast<F>(::dlsym(lib, name));
    if (!f) why = std::string("libcuda.so.1 lacks ") + name;
    return f != nullptr;
  }
  std::string error(CUresult r) const {
    const char* s = nullptr;
    error_name(r, &s);
    return s ? s : std::to_string(r);
  }
};

const char* reg_dmabuf(int nic, int fd) {
  const int rc = reg_dmabuf_mr(nic, fd, 2u << 20);
  return rc == 0 ? "ok" : errno_name(-rc);
}

}  // namespace

int exercise_cuda_dmabuf(const std::string& nic_path, std::ostream& out) {
  CudaApi cu;
  std::string why;
  if (!cu.load(why)) {
    out << "cuda unavailable (" << why << ")\n";
    return 2;
  }
  CUresult r;
  CUdevice dev;
  if ((r = cu.init(0)) != CUDA_SUCCESS || (r = cu.device_get(&dev, 0)) != CUDA_SUCCESS) {
    out << "cuda no usable GPU (" << cu.error(r) << ")\n";
    return 2;
  }
  int supported = 0;
  cu.device_attribute(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev);
  out << "dmabuf_supported " << supported << "\n";
  CUcontext ctx;
  CUdeviceptr ptr;
  int dmabuf = -1;
  if ((r = cu.ctx_create(&ctx, 0, dev)) != CUDA_SUCCESS) {
    out << "FAIL cuCtxCreate " << cu.error(r) << "\n";
    return 1;
  }
  if ((r = cu.mem_alloc(&ptr, 2 << 20)) != CUDA_SUCCESS ||
      (r = cu.range_handle(&dmabuf, ptr, 2 << 20, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0)) !=
          CUDA_SUCCESS) {
    out << "FAIL dma-buf export " << cu.error(r) << "\n";
    return 1;
  }
  UniqueFd dmabuf_owner(dmabuf);
  std::ifstream info("/proc/self/fdinfo/" + std::to_string(dmabuf));
  for (std::string line; std::getline(info, line);)
    if (line.rfind("exp_name:", 0) == 0) out << "dmabuf_exporter " << line.substr(10) << "\n";
  out << "dmabuf_fd " << dmabuf << "\n";
  if (const UniqueFd nic(::open(nic_path.c_str(), O_RDWR | O_CLOEXEC)); nic) {
    const UniqueFd memfd(::memfd_create("not-a-dmabuf", MFD_CLOEXEC));
    out << "reg_dmabuf_gpu " << reg_dmabuf(nic.get(), dmabuf) << "\n";
    out << "reg_dmabuf_memfd " << reg_dmabuf(nic.get(), memfd.get()) << "\n";
    out << "reg_dmabuf_probe " << reg_dmabuf(nic.get(), -1) << "\n";
  } else {
    out << "reg_dmabuf skipped (" << nic_path << ": " << errno_name(errno) << ")\n";
  }
  dmabuf_owner.reset();  // before the memory it exports is freed
  cu.mem_free(ptr);
  cu.ctx_destroy(ctx);
  out << "PASS cuda\n";
  return 0;
}

}  // namespace gdrproxy::testkit
