// LD_PRELOAD library that times, from the caller's side, every ioctl and open a process makes:
// what a trapped device call costs the workload itself, measured the same way natively and under
// gdrproxy, so that tests/gpu/run.sh can report gdrproxy's added time without the run-to-run
// noise of whole-workload wall times (CUDA start-up alone varies by tens of milliseconds).
// The one idea: the totals live in a shared file mapping ($CALL_CLOCK_DIR/<pid>), updated on
// every call, because ranks that leave with _exit() (Python's multiprocessing does) never run a
// destructor; the page cache keeps what the mapping holds however the process ends.
//
// File layout: struct call_totals below (8 little-endian u64), one file per process.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct call_totals {
  uint64_t ioctl_calls, ioctl_ns;
  uint64_t open_calls, open_ns;
  uint64_t reserved[4];
};

static struct call_totals fallback;  // until the constructor runs, or when no file can be made
static struct call_totals* totals = &fallback;

static int (*real_ioctl)(int, unsigned long, void*);
static int (*real_open)(const char*, int, ...);
static int (*real_open64)(const char*, int, ...);
static int (*real_openat)(int, const char*, int, ...);
static int (*real_openat64)(int, const char*, int, ...);

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void add(uint64_t* calls, uint64_t* ns, uint64_t t0) {
  const uint64_t d = now_ns() - t0;
  __atomic_add_fetch(calls, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(ns, d, __ATOMIC_RELAXED);
}

// Resolved before the first call: another library's constructor may open files before ours.
static void resolve(void) {
  real_ioctl = (int (*)(int, unsigned long, void*))dlsym(RTLD_NEXT, "ioctl");
  real_open = (int (*)(const char*, int, ...))dlsym(RTLD_NEXT, "open");
  real_open64 = (int (*)(const char*, int, ...))dlsym(RTLD_NEXT, "open64");
  real_openat = (int (*)(int, const char*, int, ...))dlsym(RTLD_NEXT, "openat");
  real_openat64 = (int (*)(int, const char*, int, ...))dlsym(RTLD_NEXT, "openat64");
}

__attribute__((constructor)) static void call_clock_init(void) {
  if (real_openat == NULL) resolve();
  const char* dir = getenv("CALL_CLOCK_DIR");
  if (dir == NULL || real_openat == NULL) return;
  char path[4096];
  if (snprintf(path, sizeof path, "%s/%d", dir, (int)getpid()) >= (int)sizeof path) return;
  const int fd = real_openat(AT_FDCWD, path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (ftruncate(fd, sizeof(struct call_totals)) == 0) {
    void* m = mmap(NULL, sizeof(struct call_totals), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m != MAP_FAILED) totals = m;
  }
  close(fd);
}

int ioctl(int fd, unsigned long request, ...) {
  va_list ap;
  va_start(ap, request);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  if (real_ioctl == NULL) resolve();
  const uint64_t t0 = now_ns();
  const int r = real_ioctl(fd, request, arg);
  add(&totals->ioctl_calls, &totals->ioctl_ns, t0);
  return r;
}

// The open family: the mode argument is read only when the flags say one was passed.
#define TIMED_OPEN(real, ...)                       \
  do {                                              \
    if (real == NULL) resolve();                    \
    mode_t mode = 0;                                \
    if (flags & (O_CREAT | __O_TMPFILE)) {          \
      va_list ap;                                   \
      va_start(ap, flags);                          \
      mode = (mode_t)va_arg(ap, int);               \
      va_end(ap);                                   \
    }                                               \
    const uint64_t t0 = now_ns();                   \
    const int r = real(__VA_ARGS__, flags, mode);   \
    add(&totals->open_calls, &totals->open_ns, t0); \
    return r;                                       \
  } while (0)

int open(const char* path, int flags, ...) {
  TIMED_OPEN(real_open, path);
}
int open64(const char* path, int flags, ...) {
  TIMED_OPEN(real_open64, path);
}
int openat(int dirfd, const char* path, int flags, ...) {
  TIMED_OPEN(real_openat, dirfd, path);
}
int openat64(int dirfd, const char* path, int flags, ...) {
  TIMED_OPEN(real_openat64, dirfd, path);
}
