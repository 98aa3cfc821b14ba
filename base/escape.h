// Tenant-controlled bytes (process names, paths) are printed only through these. A tenant picks
// its own comm and paths: printed raw, a newline forges a trace line, an escape sequence rewrites
// the operator's terminal, and bytes that are not UTF-8 make a JSON writer throw.
#pragma once

#include <string>
#include <string_view>

namespace gdrproxy {

// strace style: printable ASCII stays (but `"` and `\` are escaped), \n \r \t as such, every
// other byte as \xNN. The result is one line of printable ASCII.
std::string escape_text(std::string_view s);

// A quoted, escaped string: "..." (for paths in traces and log lines).
std::string quote_text(std::string_view s);

// Only control bytes, DEL and non-ASCII become \xNN; `\` and `"` stay. For text our own code
// composed (decoded names and values, which may embed strings already quoted with quote_text): a
// second line of defence that keeps every trace record on one printable line.
std::string printable(std::string_view s);

}  // namespace gdrproxy
