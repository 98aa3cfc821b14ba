// Hexadecimal formatting and parsing; see hex.h.
#include "base/hex.h"

#include <charconv>

namespace gdrproxy {

std::string hex(uint64_t v, int min_digits) {
  char digits[16];
  const auto res = std::to_chars(digits, digits + sizeof digits, v, 16);  // always fits
  const int n = static_cast<int>(res.ptr - digits);
  std::string s = "0x";
  if (n < min_digits) s.append(static_cast<size_t>(min_digits - n), '0');
  s.append(digits, res.ptr);
  return s;
}

std::string to_hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::optional<std::string> from_hex(std::string_view text) {
  if (text.size() % 2) return std::nullopt;
  auto val = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size() / 2);
  for (size_t i = 0; i < text.size(); i += 2) {
    int hi = val(text[i]), lo = val(text[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

}  // namespace gdrproxy
