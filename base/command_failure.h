// The one error boundary of gdrproxy's commands: whatever a command's body throws (an Error, or
// any std::exception) becomes ONE line on stderr, "<who>: <message>", with the message escaped
// (printable(): a message may carry a tenant's or a tool's bytes, and a newline in it must not
// forge a second line), and the command's failure status. Every subcommand goes through here,
// so the scheme of the README's "Exit status" is kept in one place.
#pragma once

#include <exception>
#include <string_view>

namespace gdrproxy {

// How a std::exception that is no Error reads. kPlain: like an Error. kUnexpected: "unexpected
// error: " before its message (for commands whose own failures are all Errors, so anything else
// is a bug to report).
enum class OtherExceptions { kPlain, kUnexpected };

// Prints `e` as the failure of `who` ("gdrproxy sysfs build") and returns `status`.
int report_failure(std::string_view who, const std::exception& e, int status,
                   OtherExceptions others = OtherExceptions::kPlain) noexcept;

// Runs `body` (returning the command's exit status) inside the boundary: its status, or
// `failure_status` after the one line when it throws.
template <typename Body>
int run_guarded(std::string_view who, int failure_status, Body&& body,
                OtherExceptions others = OtherExceptions::kPlain) {
  try {
    return body();
  } catch (const std::exception& e) {
    return report_failure(who, e, failure_status, others);
  }
}

}  // namespace gdrproxy
