// Hexadecimal, the one spelling: numbers as "0x" and lowercase digits (as traces, logs and
// messages show ioctl numbers, handles and masks), and binary data as two digits a byte. The idea
// not to miss: hex() runs for most fields of every trapped call, so it formats without printf.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gdrproxy {

// "0x" and the digits of `v`, zero-padded to at least `min_digits`: hex(255) is "0xff",
// hex(10, 4) is "0x000a".
std::string hex(uint64_t v, int min_digits = 1);

// Binary data (PCI config space) as two lowercase digits a byte, and back; from_hex returns
// nullopt on an odd length or a byte that is no hex digit (either case is accepted).
std::string to_hex(std::string_view bytes);
std::optional<std::string> from_hex(std::string_view text);

}  // namespace gdrproxy
