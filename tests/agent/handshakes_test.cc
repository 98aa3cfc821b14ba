// The agent's table of connections being read, with socketpairs as peers on a loop of its own:
// a peer trickling bytes is closed at the total deadline (not per byte), a full table closes its
// oldest connection for a new one, an answer is written before the close, and only a real
// seccomp listener passes is_seccomp_listener.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "proxy/agent/handshakes.h"
#include "proxy/agent/listener_check.h"
#include "proxy/engine/fd_passing.h"
#include "proxy/sandbox/notify_filter.h"

namespace gdrproxy::proxy {
namespace {

namespace asio = boost::asio;
using local = asio::local::stream_protocol;
using namespace std::chrono_literals;

// One connection: the agent's end as a socket on `io`, the peer's end as an fd.
struct Pair {
  local::socket agent;
  UniqueFd peer;
};
Pair make_pair(asio::io_context& io) {
  int sp[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
  local::socket s(io);
  s.assign(local(), sp[0]);
  return {std::move(s), UniqueFd(sp[1])};
}

// Reads everything there is; done at a newline.
Handshakes::Reader line_reader(std::shared_ptr<std::string> got, std::string answer = "") {
  return [got, answer](int fd) -> std::optional<std::string> {
    char buf[64];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) got->append(buf, size_t(n));
    if (got->find('\n') != std::string::npos || n == 0) return answer;
    return std::nullopt;
  };
}

// A reader that peeks leaves its bytes queued, so the socket stays readable: waiting for more
// must not turn into a busy loop of reads while the peer pauses between pieces.
TEST(Handshakes, APeekingReaderWaitsForMoreWithoutSpinning) {
  asio::io_context io;
  Handshakes h(5000ms, 8);
  Pair p = make_pair(io);
  int reads = 0;
  std::string seen;
  std::vector<std::string> gave_up;
  h.add(
      std::move(p.agent),
      [&](int fd) -> std::optional<std::string> {
        ++reads;
        char buf[64];
        const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT | MSG_PEEK);
        if (n > 0) seen.assign(buf, size_t(n));
        if (seen.find('\n') != std::string::npos) return std::string();
        return std::nullopt;
      },
      [&](const std::string& why) { gave_up.push_back(why); }, true);
  ASSERT_EQ(::send(p.peer.get(), "part", 4, MSG_NOSIGNAL), 4);
  asio::steady_timer t(io);
  t.expires_after(300ms);
  t.async_wait([&](const boost::system::error_code&) {
    EXPECT_LE(reads, 300) << "read in a loop while the peer paused";
    EXPECT_GE(reads, 2);
    ASSERT_EQ(::send(p.peer.get(), " rest\n", 6, MSG_NOSIGNAL), 6);
  });
  io.run_for(1000ms);
  EXPECT_EQ(seen, "part rest\n");
  EXPECT_TRUE(gave_up.empty());
  EXPECT_EQ(h.pending(), 0u);
}

TEST(Handshakes, ATricklingPeerIsClosedAtTheTotalDeadline) {
  asio::io_context io;
  Handshakes h(300ms, 8);
  Pair p = make_pair(io);
  auto got = std::make_shared<std::string>();
  std::vector<std::string> gave_up;
  h.add(std::move(p.agent), line_reader(got),
        [&](const std::string& why) { gave_up.push_back(why); });
  // A byte every 100 ms, never a newline: each is well within any per-byte timeout.
  asio::steady_timer t(io);
  const auto start = std::chrono::steady_clock::now();
  std::function<void()> drip = [&] {
    if (::send(p.peer.get(), "x", 1, MSG_NOSIGNAL) != 1) return;
    t.expires_after(100ms);
    t.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) drip();
    });
  };
  drip();
  io.run_for(1500ms);
  ASSERT_EQ(gave_up.size(), 1u);
  EXPECT_NE(gave_up[0].find("within 300 ms"), std::string::npos) << gave_up[0];
  EXPECT_EQ(h.pending(), 0u);
  EXPECT_GE(got->size(), 2u);
  EXPECT_LE(got->size(), 4u);
  // The peer sees the close at the deadline, not when it stops.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1400ms);
  char c;
  EXPECT_EQ(::recv(p.peer.get(), &c, 1, MSG_DONTWAIT), 0);
}

TEST(Handshakes, AFullTableClosesItsOldestForANewOne) {
  asio::io_context io;
  Handshakes h(10s, 4);
  std::vector<Pair> pairs;
  std::vector<int> gave_up;
  auto got = std::make_shared<std::string>();
  for (int i = 0; i < 6; ++i) {
    pairs.push_back(make_pair(io));
    h.add(std::move(pairs.back().agent), line_reader(got), [&gave_up, i](const std::string& why) {
      EXPECT_NE(why.find("to make room"), std::string::npos) << why;
      gave_up.push_back(i);
    });
  }
  EXPECT_EQ(gave_up, (std::vector<int>{0, 1}));
  EXPECT_EQ(h.pending(), 4u);
  // The newest is read at once.
  ASSERT_EQ(::send(pairs[5].peer.get(), "list\n", 5, MSG_NOSIGNAL), 5);
  io.run_for(200ms);
  EXPECT_EQ(*got, "list\n");
  EXPECT_EQ(h.pending(), 3u);
  char c;
  EXPECT_EQ(::recv(pairs[0].peer.get(), &c, 1, MSG_DONTWAIT), 0);  // closed
}

TEST(Handshakes, TheAnswerIsWrittenThenTheConnectionClosed) {
  asio::io_context io;
  Handshakes h(2s, 4);
  Pair p = make_pair(io);
  auto got = std::make_shared<std::string>();
  h.add(std::move(p.agent), line_reader(got, "answer\n"), [](const std::string&) { FAIL(); });
  ASSERT_EQ(::send(p.peer.get(), "stats\n", 6, MSG_NOSIGNAL), 6);
  io.run_for(200ms);
  char buf[64];
  const ssize_t n = ::recv(p.peer.get(), buf, sizeof buf, MSG_DONTWAIT);
  ASSERT_EQ(n, 7);
  EXPECT_EQ(std::string(buf, 7), "answer\n");
  EXPECT_EQ(::recv(p.peer.get(), buf, sizeof buf, MSG_DONTWAIT), 0);
  EXPECT_EQ(h.pending(), 0u);
}

TEST(ListenerCheck, OnlyASeccompListenerPasses) {
  std::string why;
  UniqueFd efd(::eventfd(0, EFD_CLOEXEC));
  EXPECT_FALSE(is_seccomp_listener(efd.get(), why));
  EXPECT_NE(why.find("anon_inode:[eventfd]"), std::string::npos) << why;
  int sp[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
  UniqueFd mine(sp[0]), theirs(sp[1]);
  EXPECT_FALSE(is_seccomp_listener(mine.get(), why));
  EXPECT_FALSE(is_seccomp_listener(-1, why));
  // A real listener, from a child that installs a notify filter (this process keeps none).
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int listener = -1;
    try {
      listener = install_notify_filter(FilterOptions{});
    } catch (...) {
      _exit(3);
    }
    _exit(send_fd(theirs.get(), listener) ? 0 : 4);
  }
  theirs.reset();
  std::string msg;
  UniqueFd listener(recv_fd(mine.get(), msg));
  int st = 0;
  ::waitpid(child, &st, 0);
  if (!listener) GTEST_SKIP() << "no seccomp listener here: " << msg;
  EXPECT_TRUE(is_seccomp_listener(listener.get(), why)) << why;
}

}  // namespace
}  // namespace gdrproxy::proxy
