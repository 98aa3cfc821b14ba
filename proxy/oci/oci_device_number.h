// The device number an OCI linux.devices entry asks a runtime to make. The entry is the bundle
// author's (a tenant's, through CDI or an engine's --device): its numbers are checked to be
// integers within the kernel's limits before any catalog lookup, because a runtime truncates an
// out-of-range number to another, real device that the lookup would not have recognised.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace gdrproxy::proxy {

// The character device number of `entry`; nullopt for an entry that makes no character device
// (a block device or a FIFO) or names no number. Throws Error, naming `where` and the entry's
// path (escaped), for numbers that are not non-negative integers or exceed 4095:1048575.
std::optional<dev_t> oci_char_device_number(const nlohmann::json& entry, const std::string& where);

}  // namespace gdrproxy::proxy
