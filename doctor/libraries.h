// Library binding of a live process: which RDMA, NCCL, UCX, libfabric, CUDA and NIXL libraries
// its /proc/PID/maps holds, from which file, and whether one library is mapped twice.
//
// The idea not to miss: two files with the same SONAME stem in one process (two libucp.so.0, two
// libibverbs.so.1) mean two copies of the library's globals; references bind to whichever the
// loader met first, and the job fails far from the cause (provider "version not found", UCX
// segfaults). A private-SONAME UCX (libucp-nixl.so.0) beside the global one is the intended
// exception, fine only when the NIXL UCX plugin itself links the private one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "doctor/context.h"
#include "doctor/report.h"

namespace gdrproxy::doctor {

struct MappedFile {
  std::string path;      // as the kernel prints it, " (deleted)" removed
  std::string identity;  // "dev:inode"
  bool deleted = false;
};
// The distinct files of a /proc/PID/maps text, in first-mapped order.
std::vector<MappedFile> parse_maps(const std::string& text);

struct LibraryKind {
  std::string family;  // "libibverbs", "verbs provider", "libucp", "UCX module", "NIXL plugin", ...
  std::string stem;    // file name up to ".so": "libucp-nixl", "libmlx5-rdmav34"
  std::string base;    // stem without a private SONAME suffix: "libucp"
  std::string suffix;  // "nixl" for libucp-nixl; "" when none
};
// nullopt for a library the doctor does not track.
std::optional<LibraryKind> classify_library(const std::string& path);

void check_libraries(const Context& ctx, Report& report);

}  // namespace gdrproxy::doctor
