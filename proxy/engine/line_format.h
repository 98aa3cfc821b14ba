// printf into a std::string, for the lines the engine says (refusals, notes): the handler builds
// a line that the session prints, so the text is formatted where it is decided.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>

namespace gdrproxy::proxy {

[[gnu::format(printf, 2, 3)]] inline void format_line(std::string& out, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list again;
  va_copy(again, ap);
  const int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, fmt, again);
  va_end(again);
}

}  // namespace gdrproxy::proxy
