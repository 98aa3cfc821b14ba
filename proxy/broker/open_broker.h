// The open broker: decides what an open() that may name a device does. It resolves the caller's
// path the way the caller would (its root, its cwd or dirfd, /proc/self meaning the caller), opens
// the result O_PATH, and looks the file's st_rdev up in the device catalog. Not a catalogued
// device: the open continues in the caller. A granted device: the supervisor opens the host node
// itself with the caller's flags and the fd is injected. Anything else: the configured errno.
//
// uverbs and rdma_cm nodes are the exception to injection: the kernel accepts their write()
// commands (rdma_cm's whole ABI, rxe's doorbells) only from a task whose credentials opened the
// file (ib_safe_file_access), so a granted one is opened by the caller itself. The Landlock guard
// allows exactly the granted ones; every other device node stays unopenable.
//
// Resolution only has to *recognise* device opens. Safety does not depend on it: the broker opens
// nothing but granted host nodes, and a path that resolves differently for the caller cannot
// open a device node directly because the Landlock guard refuses it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "base/unique_fd.h"
#include "proxy/devices/device_catalog.h"
#include "proxy/devices/live_catalog.h"
#include "proxy/mem/process_memory.h"

namespace gdrproxy::proxy {

struct OpenCall {
  pid_t tid = 0;
  int syscall_nr = 0;
  int dirfd = -100;  // AT_FDCWD
  uint64_t path_addr = 0;
  uint64_t flags = 0;
};

struct OpenDecision {
  // kCallerOpens: a granted uverbs/rdma_cm node the caller opens itself (see below).
  // kUndecidable: the broker could not tell what the path names (unreadable, a magic link it
  // cannot follow, resolution refused): failed closed with `err`.
  enum class Kind { kPass, kBroker, kCallerOpens, kDeny, kUndecidable } kind = Kind::kPass;
  std::string path;                  // as the caller spelled it
  const DeviceNode* node = nullptr;  // the device it names, if any
  UniqueFd host_fd;                  // kBroker: the supervisor's own fd, to inject
  int err = 0;                       // kDeny, or kBroker whose host open failed
  std::string reason;
};

class OpenBroker {
 public:
  // `later`: asked about a device number `catalog` lacks (a guarded driver registered since).
  OpenBroker(const DeviceCatalog& catalog, const Grants& grants, int deny_errno,
             const LiveCatalog* later = nullptr)
      : catalog_(catalog), grants_(grants), deny_errno_(deny_errno), later_(later) {}

  // Reads the call's arguments from the caller (openat2's struct too).
  static bool read_call(pid_t tid, int nr, const uint64_t args[6], OpenCall& out,
                        const ProcessMemory& mem);

  OpenDecision decide(const OpenCall& call, const ProcessMemory& mem) const;

 private:
  const DeviceCatalog& catalog_;
  const Grants& grants_;
  int deny_errno_;
  const LiveCatalog* later_;
};

// Rewrites the caller-relative magic prefixes (/proc/self, /proc/thread-self, /dev/fd,
// /dev/std{in,out,err}) to the caller's pid as its own /proc shows it.
std::string rewrite_self_paths(const std::string& path, uint32_t ns_tgid, uint32_t ns_tid);

// The caller's magic directories spelled through its own /proc (after rewrite_self_paths):
// /proc/<ns_tgid>/cwd/REST, /proc/<ns_tgid>/root/REST and /proc/<ns_tgid>/fd/<N>/REST (or the
// same under /proc/<ns_tgid>/task/<ns_tid>/) mean REST opened relative to its cwd, its root or
// its fd N. openat2 refuses to cross such magic links under RESOLVE_IN_ROOT, so they are
// rewritten into the (dirfd, relative path) form the caller's kernel would effectively use.
// nullopt when `path` is not of that form (N must be 1 to 9 decimal digits). Pure string work.
constexpr int kMagicRootDir = -1000;
struct MagicDirPath {
  int dirfd;         // AT_FDCWD, a caller fd number (0..999999999), or kMagicRootDir
  std::string rest;  // relative to it ("." for the directory itself)
};
std::optional<MagicDirPath> split_magic_dir_path(const std::string& path, uint32_t ns_tgid,
                                                 uint32_t ns_tid);

// The caller's own fd seen through its /proc: /proc/<ns_tgid>/fd/N or
// /proc/<ns_tgid>/task/<ns_tid>/fd/N. The digits N (one or more, any count), else nullopt.
std::optional<std::string> own_fd_link_number(const std::string& path, uint32_t ns_tgid,
                                              uint32_t ns_tid);

}  // namespace gdrproxy::proxy
