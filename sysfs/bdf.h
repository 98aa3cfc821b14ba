// PCI address strings as sysfs spells them ("0000:0c:00.0", bus "0000:0c", root dir
// "pci0000:0c"). Only string forms are needed: sysfs and every consumer compare names, not numbers.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gdrproxy::sysfs {

// True for "DDDD:BB:DD.F" with any domain width >= 4 (hex, lower case as the kernel prints).
bool is_bdf(std::string_view s);
// NCCL's stricter test used in its parent walk: exactly 12 characters of that shape.
bool is_nccl_bdf(std::string_view s);
// "0000:0c:00.0" -> "0000:0c"
std::string bus_of(std::string_view bdf);
// "0000:0c:00.3" -> "0000:0c:00.0" (function 0 of the same device)
std::string function0_of(std::string_view bdf);
// "0000:0c:01.3" -> "0000:0c:00.0" (what NCCL looks up for a VF with NCCL_IB_MERGE_VFS=1)
std::string device0_of(std::string_view bdf);
// "pci0000:07" -> true
bool is_root_complex_dir(std::string_view s);
// Lower-cases an address given on the command line.
std::string normalize_bdf(std::string_view s);

}  // namespace gdrproxy::sysfs
