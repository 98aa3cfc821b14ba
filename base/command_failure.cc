// See command_failure.h.
#include "base/command_failure.h"

#include <cstdio>
#include <string>

#include "base/error.h"
#include "base/escape.h"

namespace gdrproxy {

int report_failure(std::string_view who, const std::exception& e, int status,
                   OtherExceptions others) noexcept {
  try {
    const bool unexpected =
        others == OtherExceptions::kUnexpected && dynamic_cast<const Error*>(&e) == nullptr;
    const std::string line = std::string(who) + ": " + (unexpected ? "unexpected error: " : "") +
                             printable(e.what()) + "\n";
    std::fputs(line.c_str(), stderr);
  } catch (...) {
    // No memory for the line: the status still says the command failed.
  }
  return status;
}

}  // namespace gdrproxy
