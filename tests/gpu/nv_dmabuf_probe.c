// A CUDA Driver API program for fixture capture: creates a context, allocates 2 MiB of device
// memory and exports it as a dma-buf (the GPUDirect RDMA path), then creates 2 MiB with cuMemCreate
// and exports/imports it as a POSIX fd (the path NCCL takes to share buffers between ranks), so
// that the capture records NV_ESC_EXPORT_TO_DMABUF_FD and the OS-unix export controls next to the
// ordinary init calls. GPU machine only.
#include <cuda.h>
#include <stdio.h>
#include <unistd.h>

#define CHECK(x)                                       \
  do {                                                 \
    CUresult r_ = (x);                                 \
    if (r_ != CUDA_SUCCESS) {                          \
      fprintf(stderr, "%s failed: %d\n", #x, (int)r_); \
      return 1;                                        \
    }                                                  \
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

  CUmemAllocationProp prop = {0};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemGenericAllocationHandle handle, imported;
  CUdeviceptr va;
  int shared_fd = -1;
  CHECK(cuMemCreate(&handle, size, &prop, 0));
  CHECK(cuMemExportToShareableHandle(&shared_fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                     0));
  CHECK(cuMemImportFromShareableHandle(&imported, (void*)(long)shared_fd,
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  CHECK(cuMemAddressReserve(&va, size, 0, 0, 0));
  CHECK(cuMemMap(va, size, 0, imported, 0));
  CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  CHECK(cuMemSetAccess(va, size, &access, 1));
  CHECK(cuMemsetD8(va, 0x5a, size));
  printf("cuMem posix fd %d mapped at 0x%llx\n", shared_fd, (unsigned long long)va);
  CHECK(cuMemUnmap(va, size));
  CHECK(cuMemAddressFree(va, size));
  CHECK(cuMemRelease(imported));
  CHECK(cuMemRelease(handle));
  close(shared_fd);
  CHECK(cuCtxDestroy(ctx));
  return 0;
}
