// Image checks (--rootfs), versions: UCX, libfabric, NIXL and NCCL as the image really carries
// them, against the reference workload image's (reference_versions.h).
//
// The idea not to miss: a version is read only from what the image holds, never guessed. The
// reference image's own record (/etc/gdrproxy-workload/versions) first; else pkg-config files
// (ucx.pc, libfabric.pc, nixl.pc), NCCL's real file name (libnccl.so.2.23.4) and nccl.h. Not the
// numbers after ".so" of UCX or libfabric: those are libtool interface numbers, not releases.
// A component whose version cannot be found, or is found twice with different values, is a WARN
// that says so, never a PASS.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "doctor/context.h"
#include "doctor/ld_resolve.h"
#include "doctor/report.h"

namespace gdrproxy::doctor {

// "v1.22.0" -> {1, 22, 0}; "2.23.4-1" -> {2, 23, 4}; {} when `s` does not start with a number.
std::vector<int> version_numbers(const std::string& s);
// <0, 0, >0 as a is older, the same, newer than b (missing components count as 0).
int compare_versions(const std::vector<int>& a, const std::vector<int>& b);

struct FoundVersion {
  std::string version;
  std::string source;  // the image path it was read from
};
// Per component ("ucx", "libfabric", "nixl", "nccl"): every version found, distinct values only.
std::map<std::string, std::vector<FoundVersion>> find_image_versions(const Rootfs& rootfs);

// The comparison, against `reference` (versions.json's shape).
void compare_image_versions(const std::map<std::string, std::vector<FoundVersion>>& found,
                            const nlohmann::json& reference, Report& report);

// Both, against the built-in reference.
void check_image_versions(const Rootfs& rootfs, Report& report);

}  // namespace gdrproxy::doctor
