// ask_unix_socket: the answer is everything up to the end of the stream, and a peer that never
// answers (or is not there) costs the caller its deadline at most, with an error naming it.
#include "base/unix_request.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "base/error.h"
#include "base/unique_fd.h"

namespace gdrproxy {
namespace {

// A listening socket in a fresh directory; removed with it.
struct Listener {
  std::string dir, path;
  UniqueFd fd;
  Listener() {
    char tmpl[] = "/tmp/unix-request-test.XXXXXX";
    dir = ::mkdtemp(tmpl);
    path = dir + "/s";
    fd.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.c_str(), path.size());
    EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd.get(), 4), 0);
  }
  ~Listener() {
    ::unlink(path.c_str());
    ::rmdir(dir.c_str());
  }
};

TEST(UnixRequest, TheAnswerIsWhatComesBeforeTheEnd) {
  Listener l;
  std::thread peer([&] {
    const UniqueFd c(::accept(l.fd.get(), nullptr, nullptr));
    char buf[64] = {};
    const ssize_t n = ::read(c.get(), buf, sizeof buf - 1);
    const std::string got(buf, n > 0 ? static_cast<size_t>(n) : 0);
    const std::string answer = got == "ping 1\n" ? "{\"ok\":true}\n" : "{\"bad\":true}\n";
    (void)!::write(c.get(), answer.data(), answer.size());
  });
  EXPECT_EQ(ask_unix_socket(l.path, "the test's socket", "ping 1", 5000), "{\"ok\":true}\n");
  peer.join();
}

TEST(UnixRequest, APeerThatNeverAnswersCostsTheDeadline) {
  Listener l;  // listens, never accepts: the kernel completes the connection, nobody answers
  const auto t0 = std::chrono::steady_clock::now();
  try {
    ask_unix_socket(l.path, "the test's socket", "ping", 300);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("the test's socket " + l.path + " did not answer within 300 ms"),
        std::string::npos)
        << e.what();
  }
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took, std::chrono::milliseconds(250));
  EXPECT_LT(took, std::chrono::seconds(3));
}

TEST(UnixRequest, NothingThereIsSaidByName) {
  try {
    ask_unix_socket("/nonexistent/gdrproxy.ctl", "the agent's control socket", "list", 1000);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nothing answers at the agent's control socket "
                                         "/nonexistent/gdrproxy.ctl: No such file or directory"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace gdrproxy
