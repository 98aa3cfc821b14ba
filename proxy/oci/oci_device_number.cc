// Checking an OCI linux.devices entry's numbers (see oci_device_number.h).
#include "proxy/oci/oci_device_number.h"

#include <sys/sysmacros.h>

#include <cstdint>

#include "base/error.h"
#include "base/escape.h"
#include "proxy/abi/device_number.h"

namespace gdrproxy::proxy {
namespace {

using json = nlohmann::json;

uint64_t number(const json& entry, const char* key, uint64_t max, const std::string& what) {
  const json& v = entry[key];
  if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) {
    const uint64_t n = v.get<uint64_t>();
    if (n <= max) return n;
    throw Error(what + ": " + key + " " + std::to_string(n) + " is beyond " + std::to_string(max) +
                ", the kernel's limit; a runtime would make another device of it");
  }
  throw Error(what + ": " + key + " " + printable(v.dump()) + " is not a non-negative integer");
}

}  // namespace

std::optional<dev_t> oci_char_device_number(const json& entry, const std::string& where) {
  if (!entry.is_object() || !entry.contains("major") || !entry.contains("minor"))
    return std::nullopt;
  const json type = entry.value("type", json("c"));
  if (type == "b" || type == "p") return std::nullopt;
  const std::string what = where + ": linux.devices entry " +
                           (entry.contains("path") && entry["path"].is_string()
                                ? "\"" + printable(entry["path"].get<std::string>()) + "\""
                                : std::string("without a path"));
  const uint64_t major = number(entry, "major", kMaxDeviceMajor, what);
  const uint64_t minor = number(entry, "minor", kMaxDeviceMinor, what);
  return makedev(static_cast<unsigned>(major), static_cast<unsigned>(minor));
}

}  // namespace gdrproxy::proxy
