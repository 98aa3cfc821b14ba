// LD_PRELOAD shim that records every ioctl a process makes on an NVIDIA device node
// (/dev/nvidiactl, /dev/nvidiaN, /dev/nvidia-uvm*) with its parameter bytes before and after the
// call, for the decoder fixtures in tests/fixtures/nvidia/. Runs on the GPU machine only.
// The one idea: parameter memory is read with process_vm_readv on our own pid, so a guessed
// length that runs past a mapping yields a short copy instead of a crash.
//
// Output (file $NV_IOCTL_CAPTURE.<pid>, one per process so that forked ranks never interleave):
// the 8-byte magic "NVIOCAP1", then records
//   u32 kind (1 frontend, 2 uvm) | u32 cmd | u64 arg | i32 ret | i32 err | u32 nregions
//   nregions x { u64 addr | u32 len | u8 pre[len] | u8 post[len] }
// Region 0 is the parameter struct at arg; an IOCTL_XFER_CMD record adds the tunnelled struct.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_REGION 16384u
// sizeof UVM_*_PARAMS of the 580 driver (uvm_ioctl.h); unknown commands get 64 bytes.
static uint32_t uvm_params_size(uint32_t cmd) {
  switch (cmd) {
    case 1:
      return 24;  // UVM_RESERVE_VA
    case 2:
      return 24;  // UVM_RELEASE_VA
    case 3:
      return 48;  // UVM_REGION_COMMIT
    case 4:
      return 24;  // UVM_REGION_DECOMMIT
    case 5:
      return 48;  // UVM_REGION_SET_STREAM
    case 6:
      return 16;  // UVM_SET_STREAM_RUNNING
    case 7:
      return 272;  // UVM_SET_STREAM_STOPPED
    case 9:
      return 44;  // UVM_RUN_TEST
    case 10:
      return 24;  // UVM_ADD_SESSION
    case 11:
      return 8;  // UVM_REMOVE_SESSION
    case 12:
      return 908;  // UVM_ENABLE_COUNTERS
    case 13:
      return 48;  // UVM_MAP_COUNTER
    case 14:
      return 32;  // UVM_CREATE_EVENT_QUEUE
    case 15:
      return 12;  // UVM_REMOVE_EVENT_QUEUE
    case 16:
      return 56;  // UVM_MAP_EVENT_QUEUE
    case 17:
      return 20;  // UVM_EVENT_CTRL
    case 18:
      return 536;  // UVM_REGISTER_MPS_SERVER
    case 19:
      return 16;  // UVM_REGISTER_MPS_CLIENT
    case 20:
      return 520;  // UVM_GET_GPU_UUID_TABLE
    case 23:
      return 16;  // UVM_CREATE_RANGE_GROUP
    case 24:
      return 16;  // UVM_DESTROY_RANGE_GROUP
    case 25:
      return 32;  // UVM_REGISTER_GPU_VASPACE
    case 26:
      return 20;  // UVM_UNREGISTER_GPU_VASPACE
    case 27:
      return 56;  // UVM_REGISTER_CHANNEL
    case 28:
      return 28;  // UVM_UNREGISTER_CHANNEL
    case 29:
      return 36;  // UVM_ENABLE_PEER_ACCESS
    case 30:
      return 36;  // UVM_DISABLE_PEER_ACCESS
    case 31:
      return 32;  // UVM_SET_RANGE_GROUP
    case 33:
      return 9264;  // UVM_MAP_EXTERNAL_ALLOCATION
    case 34:
      return 24;  // UVM_FREE
    case 35:
      return 24;  // UVM_MEM_MAP
    case 37:
      return 40;  // UVM_REGISTER_GPU
    case 38:
      return 20;  // UVM_UNREGISTER_GPU
    case 39:
      return 8;  // UVM_PAGEABLE_MEM_ACCESS
    case 40:
      return 272;  // UVM_PREVENT_MIGRATION_RANGE_GROUPS
    case 41:
      return 272;  // UVM_ALLOW_MIGRATION_RANGE_GROUPS
    case 42:
      return 40;  // UVM_SET_PREFERRED_LOCATION
    case 43:
      return 24;  // UVM_UNSET_PREFERRED_LOCATION
    case 44:
      return 24;  // UVM_ENABLE_READ_DUPLICATION
    case 45:
      return 24;  // UVM_DISABLE_READ_DUPLICATION
    case 46:
      return 40;  // UVM_SET_ACCESSED_BY
    case 47:
      return 40;  // UVM_UNSET_ACCESSED_BY
    case 51:
      return 80;  // UVM_MIGRATE
    case 53:
      return 32;  // UVM_MIGRATE_RANGE_GROUP
    case 54:
      return 20;  // UVM_ENABLE_SYSTEM_WIDE_ATOMICS
    case 55:
      return 20;  // UVM_DISABLE_SYSTEM_WIDE_ATOMICS
    case 56:
      return 56;  // UVM_TOOLS_INIT_EVENT_TRACKER
    case 57:
      return 8;  // UVM_TOOLS_SET_NOTIFICATION_THRESHOLD
    case 58:
      return 16;  // UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS
    case 59:
      return 16;  // UVM_TOOLS_EVENT_QUEUE_DISABLE_EVENTS
    case 60:
      return 16;  // UVM_TOOLS_ENABLE_COUNTERS
    case 61:
      return 16;  // UVM_TOOLS_DISABLE_COUNTERS
    case 62:
      return 40;  // UVM_TOOLS_READ_PROCESS_MEMORY
    case 63:
      return 40;  // UVM_TOOLS_WRITE_PROCESS_MEMORY
    case 64:
      return 16;  // UVM_TOOLS_GET_PROCESSOR_UUID_TABLE
    case 65:
      return 40;  // UVM_MAP_DYNAMIC_PARALLELISM_REGION
    case 66:
      return 40;  // UVM_UNMAP_EXTERNAL
    case 67:
      return 4;  // UVM_TOOLS_FLUSH_EVENTS
    case 68:
      return 9248;  // UVM_ALLOC_SEMAPHORE_POOL
    case 69:
      return 4;  // UVM_CLEAN_UP_ZOMBIE_RESOURCES
    case 70:
      return 24;  // UVM_PAGEABLE_MEM_ACCESS_ON_GPU
    case 71:
      return 24;  // UVM_POPULATE_PAGEABLE
    case 72:
      return 24;  // UVM_VALIDATE_VA_RANGE
    case 73:
      return 24;  // UVM_CREATE_EXTERNAL_RANGE
    case 74:
      return 40;  // UVM_MAP_EXTERNAL_SPARSE
    case 75:
      return 8;  // UVM_MM_INITIALIZE
    case 76:
      return 56;  // UVM_TOOLS_INIT_EVENT_TRACKER_V2
    case 77:
      return 16;  // UVM_TOOLS_GET_PROCESSOR_UUID_TABLE_V2
    case 78:
      return 56;  // UVM_ALLOC_DEVICE_P2P
    case 79:
      return 4;  // UVM_CLEAR_ALL_ACCESS_COUNTERS
    case 80:
      return 32;  // UVM_DISCARD
    case 2047:
      return 8;  // UVM_IS_8_SUPPORTED
    case 0x30000001:
      return 16;  // UVM_INITIALIZE
    case 0x30000002:
      return 0;  // UVM_DEINITIALIZE
    default:
      return 64;
  }
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int out_fd = -2;

static int device_kind(int fd) {
  char link[64], path[256];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = 0;
  if (strncmp(path, "/dev/nvidia-uvm", 15) == 0) return 2;
  if (strcmp(path, "/dev/nvidiactl") == 0) return 1;
  if (strncmp(path, "/dev/nvidia", 11) == 0 && path[11] >= '0' && path[11] <= '9') return 1;
  return 0;
}

static uint32_t self_read(uint64_t addr, void* buf, uint32_t len) {
  struct iovec local = {buf, len}, remote = {(void*)(uintptr_t)addr, len};
  ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  return n < 0 ? 0 : (uint32_t)n;
}

struct region {
  uint64_t addr;
  uint32_t len;
  unsigned char pre[MAX_REGION], post[MAX_REGION];
};

static void write_all(const void* p, size_t n) {
  const char* c = p;
  while (n > 0) {
    ssize_t w = write(out_fd, c, n);
    if (w <= 0) return;
    c += w;
    n -= (size_t)w;
  }
}

static pid_t out_pid;

int ioctl(int fd, unsigned long req, ...) {
  static int (*real_ioctl)(int, unsigned long, ...);
  va_list ap;
  va_start(ap, req);
  void* argp = va_arg(ap, void*);
  va_end(ap);
  if (!real_ioctl) real_ioctl = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
  int kind = device_kind(fd);
  if (!kind) return real_ioctl(fd, req, argp);

  static __thread struct region regs[2];
  uint32_t cmd = (uint32_t)req, nregs = 1;
  uint64_t arg = (uint64_t)(uintptr_t)argp;
  regs[0].addr = arg;
  regs[0].len = kind == 1 ? ((cmd >> 16) & 0x3fff) : uvm_params_size(cmd);
  regs[0].len = self_read(arg, regs[0].pre, regs[0].len);
  if (kind == 1 && (cmd & 0xff) == 211 && regs[0].len >= 16) {  // IOCTL_XFER_CMD
    uint32_t inner_size;
    uint64_t inner_ptr;
    memcpy(&inner_size, regs[0].pre + 4, 4);
    memcpy(&inner_ptr, regs[0].pre + 8, 8);
    regs[1].addr = inner_ptr;
    regs[1].len =
        self_read(inner_ptr, regs[1].pre, inner_size < MAX_REGION ? inner_size : MAX_REGION);
    nregs = 2;
  }
  int ret = real_ioctl(fd, req, argp);
  int err = errno;
  for (uint32_t i = 0; i < nregs; ++i)
    regs[i].len = self_read(regs[i].addr, regs[i].post, regs[i].len);

  pthread_mutex_lock(&lock);
  if (out_fd == -2 || out_pid != getpid()) {  // first call, or first call after a fork
    const char* p = getenv("NV_IOCTL_CAPTURE");
    char path[4096];
    out_pid = getpid();
    if (out_fd >= 0) close(out_fd);
    out_fd = -1;
    if (p && snprintf(path, sizeof path, "%s.%d", p, (int)out_pid) < (int)sizeof path) {
      out_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    }
    if (out_fd >= 0) write_all("NVIOCAP1", 8);
  }
  if (out_fd >= 0) {
    int32_t r = ret, e = ret < 0 ? err : 0;
    uint32_t k = (uint32_t)kind;
    write_all(&k, 4);
    write_all(&cmd, 4);
    write_all(&arg, 8);
    write_all(&r, 4);
    write_all(&e, 4);
    write_all(&nregs, 4);
    for (uint32_t i = 0; i < nregs; ++i) {
      write_all(&regs[i].addr, 8);
      write_all(&regs[i].len, 4);
      write_all(regs[i].pre, regs[i].len);
      write_all(regs[i].post, regs[i].len);
    }
  }
  pthread_mutex_unlock(&lock);
  errno = err;
  return ret;
}
