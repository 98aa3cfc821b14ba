// '*'-only globs, as policy rules and the agent's container rules write them. The idea not to
// miss: matching is linear in practice (on a mismatch only the last '*' is retried one character
// further); a recursive matcher is exponential in the number of stars, and patterns come from
// files an operator may not have checked against hostile names.
#pragma once

namespace gdrproxy::proxy {

// Whether `s` matches `pat`, where '*' matches any run of characters (also none).
inline bool glob_match(const char* pat, const char* s) {
  const char* star = nullptr;
  const char* resume = nullptr;
  while (*s) {
    if (*pat == '*') {
      star = pat++;
      resume = s;
    } else if (*pat == *s) {
      ++pat;
      ++s;
    } else if (star) {
      pat = star + 1;
      s = ++resume;
    } else {
      return false;
    }
  }
  while (*pat == '*') ++pat;
  return *pat == 0;
}

}  // namespace gdrproxy::proxy
