// The raw NVIDIA table sets and the version tree that nvidia_abi.cc turns into NvidiaDriverAbi
// objects. A driver release is its parent's tables plus a patch (entries added or replaced,
// numbers removed), the way the driver's own branch history grows; a release whose ABI did not
// change has an empty patch. Internal to proxy/abi: everything else goes through nvidia_abi.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

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

// parent + patch, sorted by key: entries of `add` replace same-keyed ones, `remove` drops keys.
template <typename T, typename K, typename KeyFn>
std::vector<T> apply_patch(const std::vector<T>& parent, std::span<const T> add,
                           std::span<const K> remove, KeyFn key_of) {
  std::vector<T> out;
  for (const T& e : parent) {
    const K k = key_of(e);
    const bool dropped = std::find(remove.begin(), remove.end(), k) != remove.end();
    const bool replaced =
        std::any_of(add.begin(), add.end(), [&](const T& a) { return key_of(a) == k; });
    if (!dropped && !replaced) out.push_back(e);
  }
  out.insert(out.end(), add.begin(), add.end());
  std::stable_sort(out.begin(), out.end(),
                   [&](const T& a, const T& b) { return key_of(a) < key_of(b); });
  return out;
}

// Status names, sorted by value.
struct StatusName {
  uint32_t value;
  const char* name;
};
std::span<const StatusName> status_names();

}  // namespace gdrproxy::proxy::nvtables
