// What the harness prints and how it fails. The idea not to miss: every line goes through
// printable() (base/escape.h, the one escaper), since interface names, node names and
// paths come from the system or the launcher; and a failure is an exception carrying the exit
// status the verb ends with (1 failure, 2 usage, 3 no rail, 125 a run or attach not set up), so
// the lifecycle code can clean up on the way out and the CLI prints one line.
#pragma once

#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace gdrproxy::harness {

// The name the harness's lines start with (the same whether run as `gdr-harness` or as
// `gdrproxy harness`).
inline constexpr const char* kProg = "gdr-harness";

// Where say() writes: stderr, or what a Capture holds.
std::ostream& log();
// "gdr-harness: LINE" on log(), made printable.
void say(const std::string& line);

// While alive, log() is a buffer (a reclaim's own lines are shown only if it fails).
class Capture {
 public:
  Capture();
  ~Capture();
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  std::string text() const { return buffer_.str(); }

 private:
  std::ostream* previous_;
  std::ostringstream buffer_;
};

// A verb's failure: printed as "gdr-harness: error: WHAT", ending the verb with `status`.
class Failure : public std::runtime_error {
 public:
  explicit Failure(const std::string& what, int status = 1)
      : std::runtime_error(what), status_(status) {}
  int status() const noexcept { return status_; }

 private:
  int status_;
};

// A usage error: "gdr-harness: WHAT (see gdr-harness VERB --help)", status 2.
class UsageError : public std::runtime_error {
 public:
  UsageError(const std::string& what, std::string verb)
      : std::runtime_error(what), verb_(std::move(verb)) {}
  const std::string& verb() const noexcept { return verb_; }

 private:
  std::string verb_;
};

}  // namespace gdrproxy::harness
