// What a fuzz target does when it finds a bug: one line naming the target (its source file) and
// the property that broke, then abort(), which libFuzzer reports and saves the input for. The
// idea not to miss: a target checks properties of what the code under test returned, not only
// that nothing crashed.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace gdrproxy::fuzz {

// (__builtin_FILE as a default argument names the caller's file: Debian 12's clang has no
// std::source_location.)
[[noreturn]] inline void fail(const char* what, const char* file = __builtin_FILE()) {
  std::string_view target = file;
  target = target.substr(target.rfind('/') + 1);
  target = target.substr(0, target.rfind('.'));
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(target.size()), target.data(), what);
  std::abort();
}

// One non-empty line of bytes 0x20..0x7e: what may go to an operator's log or terminal as is.
inline bool one_printable_line(std::string_view s) {
  for (const unsigned char c : s)
    if (c < 0x20 || c >= 0x7f) return false;
  return !s.empty();
}

}  // namespace gdrproxy::fuzz
