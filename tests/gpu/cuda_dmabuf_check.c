/*
 * cuda_dmabuf_check: the CUDA Driver API path GPUDirect over dma-buf takes. cuInit, a context,
 * cuMemAlloc of 2 MiB, export as a dma-buf fd (cuMemGetHandleForAddressRange), print the
 * exporter name the kernel reports for that fd, then try MR.REG_DMABUF_MR on
 * /dev/infiniband/uverbs0 (a stand-in NIC on a GPU machine without one) with three fds: the GPU
 * dma-buf, a memfd, and -1 (NCCL's capability probe). Under gdrproxy the memfd registration is
 * refused (EPERM) and the other two reach the device.
 * Prints one "KEY value" line per fact; exits non-zero when a CUDA step fails.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <errno.h>
#include <fcntl.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define CHECK(call)                                              \
  do {                                                           \
    CUresult r_ = (call);                                        \
    if (r_ != CUDA_SUCCESS) {                                    \
      const char* s_ = NULL;                                     \
      cuGetErrorName(r_, &s_);                                   \
      printf("FAIL %s -> %s\n", #call, s_ ? s_ : "?");           \
      return 1;                                                  \
    }                                                            \
  } while (0)

static const char* reg_dmabuf(int dev, int fd) {
  struct {
    struct ib_uverbs_ioctl_hdr hdr;
    struct ib_uverbs_attr attrs[4];
  } __attribute__((packed)) req;
  memset(&req, 0, sizeof req);
  req.hdr.length = sizeof req;
  req.hdr.object_id = UVERBS_OBJECT_MR;
  req.hdr.method_id = UVERBS_METHOD_REG_DMABUF_MR;
  req.hdr.num_attrs = 4;
  req.attrs[0].attr_id = UVERBS_ATTR_REG_DMABUF_MR_HANDLE;
  req.attrs[1].attr_id = UVERBS_ATTR_REG_DMABUF_MR_LENGTH;
  req.attrs[1].len = 8;
  req.attrs[1].data = 2 << 20;
  req.attrs[2].attr_id = UVERBS_ATTR_REG_DMABUF_MR_FD;
  req.attrs[2].len = 4;
  req.attrs[2].data = (uint32_t)fd;
  req.attrs[3].attr_id = UVERBS_ATTR_REG_DMABUF_MR_OFFSET;
  req.attrs[3].len = 8;
  if (ioctl(dev, RDMA_VERBS_IOCTL, &req) == 0) return "ok";
  return strerrorname_np(errno);
}

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr ptr;
  int supported = 0;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev));
  printf("dmabuf_supported %d\n", supported);
  CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
  CHECK(cuMemAlloc(&ptr, 2 << 20));
  int dmabuf = -1;
  CHECK(cuMemGetHandleForAddressRange(&dmabuf, ptr, 2 << 20, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/self/fdinfo/%d", dmabuf);
  FILE* f = fopen(path, "r");
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "exp_name:", 9) == 0) printf("dmabuf_exporter %s", line + 10);
  if (f) fclose(f);
  printf("dmabuf_fd %d\n", dmabuf);
  int nic = open("/dev/infiniband/uverbs0", O_RDWR | O_CLOEXEC);
  if (nic >= 0) {
    int memfd = memfd_create("not-a-dmabuf", MFD_CLOEXEC);
    printf("reg_dmabuf_gpu %s\n", reg_dmabuf(nic, dmabuf));
    printf("reg_dmabuf_memfd %s\n", reg_dmabuf(nic, memfd));
    printf("reg_dmabuf_probe %s\n", reg_dmabuf(nic, -1));
  } else {
    printf("reg_dmabuf skipped (no /dev/infiniband/uverbs0: %s)\n", strerrorname_np(errno));
  }
  close(dmabuf);
  CHECK(cuMemFree(ptr));
  CHECK(cuCtxDestroy(ctx));
  printf("PASS cuda\n");
  return 0;
}
