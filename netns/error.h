// The one error type of the rail launcher. Every message names the interface, namespace, path or
// file it is about, so the CLI can print it as is; callers never need to add context afterwards.
#pragma once

#include <stdexcept>
#include <string>

namespace gdrproxy::netns {

class NetnsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "<what>: <strerror(errno_value)>" as a NetnsError.
[[noreturn]] void throw_errno(const std::string& what, int errno_value);

}  // namespace gdrproxy::netns
