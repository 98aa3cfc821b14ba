// PCI address string helpers; see bdf.h.
#include "sysfs/bdf.h"

#include <cctype>

namespace gdrproxy::sysfs {

static bool hex(char c) {
  return std::isxdigit(static_cast<unsigned char>(c)) != 0;
}

bool is_bdf(std::string_view s) {
  // domain ':' bus(2) ':' dev(2) '.' fn(1); domain is 4 or more hex digits.
  if (s.size() < 12) return false;
  size_t d = s.size() - 8;  // length of the domain part
  if (d < 4) return false;
  for (size_t i = 0; i < d; ++i)
    if (!hex(s[i])) return false;
  std::string_view t = s.substr(d);  // ":bb:dd.f"
  return t[0] == ':' && hex(t[1]) && hex(t[2]) && t[3] == ':' && hex(t[4]) && hex(t[5]) &&
         t[6] == '.' && t[7] >= '0' && t[7] <= '7';
}

bool is_nccl_bdf(std::string_view s) {
  return s.size() == 12 && is_bdf(s);
}

std::string bus_of(std::string_view bdf) {
  return std::string(bdf.substr(0, bdf.size() - 5));
}

std::string function0_of(std::string_view bdf) {
  std::string s(bdf);
  s.back() = '0';
  return s;
}

std::string device0_of(std::string_view bdf) {
  std::string s(bdf);
  s[s.size() - 4] = '0';
  s[s.size() - 3] = '0';
  s.back() = '0';
  return s;
}

bool is_root_complex_dir(std::string_view s) {
  if (s.size() < 3 + 4 + 3 || s.substr(0, 3) != "pci") return false;
  std::string_view rest = s.substr(3);
  size_t colon = rest.find(':');
  if (colon == std::string_view::npos || colon < 4 || rest.size() != colon + 3) return false;
  for (size_t i = 0; i < rest.size(); ++i)
    if (i != colon && !hex(rest[i])) return false;
  return true;
}

std::string normalize_bdf(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // Accept "0c:00.0" as shorthand for domain 0.
  if (out.size() == 7) out = "0000:" + out;
  return out;
}

}  // namespace gdrproxy::sysfs
