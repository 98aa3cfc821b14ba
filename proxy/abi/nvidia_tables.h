// The raw NVIDIA table sets and the version tree that nvidia_abi.cc turns into NvidiaDriverAbi
// objects. A driver release is its parent's tables plus a patch (entries added or replaced,
// numbers removed), the way the driver's own branch history grows; a release whose ABI did not
// change has an empty patch. Internal to proxy/abi: everything else goes through nvidia_abi.h.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "proxy/abi/nvidia_abi.h"

namespace gdrproxy::proxy::nvtables {

// One complete set of tables, each sorted by number (lookups binary-search them).
struct TableSet {
  std::span<const NvEscape> escapes;
  std::span<const NvClass> classes;
  std::span<const NvControl> controls;
  std::span<const NvUvmIoctl> uvm_ioctls;
};

// The difference of a release from its parent. Entries in the add spans replace entries with
// the same number; numbers in the remove spans disappear.
struct Patch {
  TableSet add;
  std::span<const uint8_t> remove_escapes;
  std::span<const uint32_t> remove_classes;
  std::span<const uint32_t> remove_controls;
  std::span<const uint32_t> remove_uvm_ioctls;
};

// A driver release: either a root with its own full tables, or a child of an earlier release.
struct Release {
  std::string_view version;
  std::string_view parent;                // empty for a root
  const TableSet* root_tables = nullptr;  // set only for a root
  Patch patch{};
};

// The 580 branch (open-gpu-kernel-modules 580.65.06 onwards).
const TableSet& tables_580();
// Every release this build knows, parents before children.
std::span<const Release> releases();

// Status names, sorted by value.
struct StatusName {
  uint32_t value;
  const char* name;
};
std::span<const StatusName> status_names();

}  // namespace gdrproxy::proxy::nvtables
