// A CUDA Driver API program for fixture capture: creates a context, allocates 2 MiB of device
// memory and exports it as a dma-buf (the GPUDirect RDMA path), so that the capture records
// NV_ESC_EXPORT_TO_DMABUF_FD next to the ordinary init calls. GPU machine only.
#include <cuda.h>
#include <stdio.h>
#include <unistd.h>

#define CHECK(x)                                                  \
  do {                                                            \
    CUresult r_ = (x);                                            \
    if (r_ != CUDA_SUCCESS) {                                     \
      fprintf(stderr, "%s failed: %d\n", #x, (int)r_);            \
      return 1;                                                   \
    }                                                             \
  } while (0)

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr ptr;
  const size_t size = 2u << 20;
  int fd = -1;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
  CHECK(cuMemAlloc(&ptr, size));
  CHECK(cuMemGetHandleForAddressRange(&fd, ptr, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
  printf("dma-buf fd %d for 0x%llx+%zu\n", fd, (unsigned long long)ptr, size);
  close(fd);
  CHECK(cuMemFree(ptr));
  CHECK(cuCtxDestroy(ctx));
  return 0;
}
