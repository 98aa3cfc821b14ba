// The commands' one error boundary (base/command_failure.h): a failure is one escaped line on
// stderr and the status asked for. Stderr is caught through a pipe.
#include "base/command_failure.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "base/error.h"

namespace gdrproxy {
namespace {

// What `fn` writes to stderr (fd 2), and its result.
template <typename Fn>
std::string stderr_of(Fn fn, int& result) {
  int p[2];
  EXPECT_EQ(::pipe(p), 0);
  std::fflush(stderr);
  const int saved = ::dup(2);
  ::dup2(p[1], 2);
  ::close(p[1]);
  result = fn();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::string out;
  char buf[256];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(p[0]);
  return out;
}

TEST(CommandFailure, AnErrorIsOneLineWithItsStatus) {
  int rc = -1;
  const std::string out = stderr_of(
      [] {
        return run_guarded("gdrproxy sysfs build", 1, []() -> int { throw Error("no tree"); });
      },
      rc);
  EXPECT_EQ(out, "gdrproxy sysfs build: no tree\n");
  EXPECT_EQ(rc, 1);
}

TEST(CommandFailure, ABodysOwnStatusPassesThrough) {
  int rc = -1;
  EXPECT_EQ(stderr_of([] { return run_guarded("gdrproxy run", 125, [] { return 7; }); }, rc), "");
  EXPECT_EQ(rc, 7);
}

TEST(CommandFailure, ControlBytesInTheMessageStayOnOneLine) {
  int rc = -1;
  const std::string out = stderr_of(
      [] {
        return run_guarded("gdrproxy run", 125,
                           []() -> int { throw std::runtime_error("bad\nforged: line\x1b[2J"); });
      },
      rc);
  EXPECT_EQ(out, "gdrproxy run: bad\\x0aforged: line\\x1b[2J\n");
  EXPECT_EQ(rc, 125);
}

TEST(CommandFailure, OtherExceptionsMarkedUnexpectedWhereAsked) {
  int rc = -1;
  EXPECT_EQ(stderr_of(
                [] {
                  return run_guarded(
                      "gdrproxy netns", 1, []() -> int { throw std::out_of_range("at"); },
                      OtherExceptions::kUnexpected);
                },
                rc),
            "gdrproxy netns: unexpected error: at\n");
  EXPECT_EQ(stderr_of(
                [] {
                  return run_guarded(
                      "gdrproxy netns", 1, []() -> int { throw Error("journal"); },
                      OtherExceptions::kUnexpected);
                },
                rc),
            "gdrproxy netns: journal\n");
}

}  // namespace
}  // namespace gdrproxy
