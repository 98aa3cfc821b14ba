// See escape.h.
#include "base/escape.h"

namespace gdrproxy {

namespace {

constexpr char kHex[] = "0123456789abcdef";

void hex_byte(std::string& out, unsigned char c) {
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 0xf];
}

}  // namespace

std::string escape_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '"':
      case '\\':
        out += '\\';
        out += ch;
        continue;
      default:
        break;
    }
    if (c >= 0x20 && c < 0x7f)
      out += ch;
    else
      hex_byte(out, c);
  }
  return out;
}

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f)
      out += ch;
    else
      hex_byte(out, c);
  }
  return out;
}

std::string quote_text(std::string_view s) {
  return "\"" + escape_text(s) + "\"";
}

}  // namespace gdrproxy
