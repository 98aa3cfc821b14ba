// The one error type of gdrproxy: an Error's message names what failed (the path, device,
// interface or field it is about) so it can be printed as is, and carries the errno behind it
// when a system call failed (error_code(), 0 when none).
#pragma once

#include <stdexcept>
#include <string>

namespace gdrproxy {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, int error_code = 0)
      : std::runtime_error(what), error_code_(error_code) {}
  explicit Error(const char* what, int error_code = 0)
      : std::runtime_error(what), error_code_(error_code) {}

  // The errno of the failed call, or 0 if the error did not come from one.
  int error_code() const noexcept { return error_code_; }

 private:
  int error_code_ = 0;
};

// Throws Error("<what>: <strerror(errno_value)>", errno_value).
[[noreturn]] void throw_errno(const std::string& what, int errno_value);

}  // namespace gdrproxy
