// The connection a runtime hands a container's state over, with a socketpair as the runtime: the
// protocol's shapes are received whole, every other shape is refused, and no refusal leaves a
// received fd open (this process's /proc/self/fd is counted around each case) or holds the
// caller past its deadline.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "proxy/agent/state_socket.h"
#include "proxy/oci/container_state.h"

namespace gdrproxy::proxy {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr char kState[] =
    R"({"ociVersion":"1.2.0","fds":["seccompFd"],"pid":4422,"metadata":"MKNOD=/dev/null",)"
    R"("state":{"ociVersion":"1.2.0","id":"oci-container1","status":"creating","pid":4422,)"
    R"("bundle":"/containers/redis","annotations":{"a":"b"}}})";

size_t open_fd_count() {
  size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
    ++count;
  return count;
}

// One sendmsg() of `bytes`, with `fds` attached when there are any.
bool send_part(int sock, std::string_view bytes, const std::vector<int>& fds = {}) {
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(fds.size() * sizeof(int)));
  if (!fds.empty()) {
    m.msg_control = control.data();
    m.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
  }
  return ::sendmsg(sock, &m, MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

bool same_file(int a, int b) {
  struct stat sa {
  }, sb{};
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

void close_all(const std::vector<int>& fds) {
  for (const int fd : fds) ::close(fd);
}

// A runtime's connection to the agent, and a pipe whose read end stands in for the listener.
struct Connection {
  int runtime = -1;
  int agent = -1;
  int listener = -1;
  int pipe_write = -1;

  Connection() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    runtime = sv[0];
    agent = sv[1];
    int p[2];
    EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
    listener = p[0];
    pipe_write = p[1];
  }
  ~Connection() {
    for (const int fd : {runtime, agent, listener, pipe_write})
      if (fd >= 0) ::close(fd);
  }
  void hang_up() {
    ::close(runtime);
    runtime = -1;
  }
};

TEST(StateSocket, SplitOverThreeMessagesWithTheFdInTheFirst) {
  const size_t before = open_fd_count();
  {
    Connection c;
    const std::string text = kState;
    ASSERT_TRUE(send_part(c.runtime, text.substr(0, 10), {c.listener}));
    ASSERT_TRUE(send_part(c.runtime, text.substr(10, 100)));
    ASSERT_TRUE(send_part(c.runtime, text.substr(110)));
    c.hang_up();
    ReceivedState got;
    std::string why;
    ASSERT_TRUE(receive_container_state(c.agent, got, why, 5000)) << why;
    EXPECT_EQ(got.json, text);
    ASSERT_EQ(got.fds.size(), 1u);
    EXPECT_TRUE(same_file(got.fds[0], c.listener));
    EXPECT_TRUE(::fcntl(got.fds[0], F_GETFD) & FD_CLOEXEC);
    const auto state = parse_container_process_state(got.json, got.fds.size(), why);
    ASSERT_TRUE(state) << why;
    EXPECT_EQ(state->seccomp_fd_index, 0u);
    close_all(got.fds);
  }
  EXPECT_EQ(open_fd_count(), before);
}

// The fd store's case: an agent peeks at a connection, part of the state there, and dies; the
// next agent reads the same connection from its first byte, the listener with it.
TEST(StateSocket, PeekingReaderLeavesTheWholeStateForTheNext) {
  const size_t before = open_fd_count();
  {
    Connection c;
    const std::string text = kState;
    ASSERT_TRUE(send_part(c.runtime, text.substr(0, 10), {c.listener}));
    ASSERT_TRUE(send_part(c.runtime, text.substr(10, 100)));
    std::string why;
    {
      StateReader first(true);
      ASSERT_EQ(first.read_available(c.agent, why), StateReader::Step::kMore) << why;
      EXPECT_EQ(first.bytes(), 110u);
      // Nothing new: still kMore, and the fd is not taken a second time.
      ASSERT_EQ(first.read_available(c.agent, why), StateReader::Step::kMore) << why;
      EXPECT_EQ(first.bytes(), 110u);
    }  // dies with the part it peeked
    ASSERT_TRUE(send_part(c.runtime, text.substr(110)));
    c.hang_up();
    StateReader next(true);
    ASSERT_EQ(next.read_available(c.agent, why), StateReader::Step::kDone) << why;
    ReceivedState got = next.take();
    EXPECT_EQ(got.json, text);
    ASSERT_EQ(got.fds.size(), 1u);
    EXPECT_TRUE(same_file(got.fds[0], c.listener));
    close_all(got.fds);
    // Still there for a plain reader: peeking consumed nothing.
    ReceivedState again;
    ASSERT_TRUE(receive_container_state(c.agent, again, why, 5000)) << why;
    EXPECT_EQ(again.json, text);
    ASSERT_EQ(again.fds.size(), 1u);
    close_all(again.fds);
  }
  EXPECT_EQ(open_fd_count(), before);
}

TEST(StateSocket, FdsWithTheSecondMessageWhenTheFirstHadNone) {
  // The kernel may glue a message without fds onto the next one: "first" is the first read
  // that carries fds.
  Connection c;
  ASSERT_TRUE(send_part(c.runtime, "{\"ociVersion\""));
  ASSERT_TRUE(send_part(c.runtime, ":\"1.0.2\"}", {c.listener}));
  c.hang_up();
  ReceivedState got;
  std::string why;
  ASSERT_TRUE(receive_container_state(c.agent, got, why, 5000)) << why;
  EXPECT_EQ(got.json, "{\"ociVersion\":\"1.0.2\"}");
  ASSERT_EQ(got.fds.size(), 1u);
  EXPECT_TRUE(same_file(got.fds[0], c.listener));
  close_all(got.fds);
}

TEST(StateSocket, FdsInALaterMessageAreRefusedAndClosed) {
  const size_t before = open_fd_count();
  {
    Connection c;
    const std::string text = kState;
    ASSERT_TRUE(send_part(c.runtime, text.substr(0, 10), {c.listener}));
    ASSERT_TRUE(send_part(c.runtime, text.substr(10, 100), {c.listener, c.pipe_write}));
    ASSERT_TRUE(send_part(c.runtime, text.substr(110)));
    c.hang_up();
    const size_t in_flight = open_fd_count();
    ReceivedState got;
    std::string why;
    EXPECT_FALSE(receive_container_state(c.agent, got, why, 5000));
    EXPECT_NE(why.find("later message"), std::string::npos) << why;
    EXPECT_NE(why.find("2 more"), std::string::npos) << why;
    EXPECT_TRUE(got.json.empty());
    EXPECT_TRUE(got.fds.empty());
    EXPECT_EQ(open_fd_count(), in_flight);
  }
  EXPECT_EQ(open_fd_count(), before);
}

TEST(StateSocket, OversizeStateIsRefused) {
  const size_t before = open_fd_count();
  {
    Connection c;
    std::thread runtime([&] {
      EXPECT_TRUE(send_part(c.runtime, "{", {c.listener}));
      EXPECT_TRUE(send_part(c.runtime, std::string(kMaxStateBytes, ' ')));
      c.hang_up();
    });
    const size_t in_flight = open_fd_count();
    ReceivedState got;
    std::string why;
    EXPECT_FALSE(receive_container_state(c.agent, got, why, 10000));
    runtime.join();
    EXPECT_NE(why.find("larger than 65536 bytes"), std::string::npos) << why;
    EXPECT_TRUE(got.fds.empty());
    EXPECT_LE(open_fd_count(), in_flight);
  }
  EXPECT_EQ(open_fd_count(), before);
}

TEST(StateSocket, StateOfExactlyTheLimitIsAccepted) {
  Connection c;
  std::thread runtime([&] {
    EXPECT_TRUE(send_part(c.runtime, "{", {c.listener}));
    EXPECT_TRUE(send_part(c.runtime, std::string(kMaxStateBytes - 2, ' ') + "}"));
    c.hang_up();
  });
  ReceivedState got;
  std::string why;
  EXPECT_TRUE(receive_container_state(c.agent, got, why, 10000)) << why;
  runtime.join();
  EXPECT_EQ(got.json.size(), kMaxStateBytes);
  EXPECT_EQ(got.fds.size(), 1u);
  close_all(got.fds);
}

TEST(StateSocket, MoreFdsThanAcceptedAreRefusedAndClosed) {
  const size_t before = open_fd_count();
  {
    Connection c;
    ASSERT_TRUE(send_part(c.runtime, kState, std::vector<int>(kMaxStateFds + 1, c.listener)));
    c.hang_up();
    const size_t in_flight = open_fd_count();
    ReceivedState got;
    std::string why;
    EXPECT_FALSE(receive_container_state(c.agent, got, why, 5000));
    EXPECT_NE(why.find("more than 16 fds"), std::string::npos) << why;
    EXPECT_TRUE(got.fds.empty());
    EXPECT_EQ(open_fd_count(), in_flight);
  }
  EXPECT_EQ(open_fd_count(), before);

  // As many as accepted arrive, in order.
  Connection c;
  ASSERT_TRUE(send_part(c.runtime, kState, std::vector<int>(kMaxStateFds, c.listener)));
  c.hang_up();
  ReceivedState got;
  std::string why;
  ASSERT_TRUE(receive_container_state(c.agent, got, why, 5000)) << why;
  ASSERT_EQ(got.fds.size(), kMaxStateFds);
  for (const int fd : got.fds) EXPECT_TRUE(same_file(fd, c.listener));
  close_all(got.fds);
}

TEST(StateSocket, PeerThatNeverClosesTimesOut) {
  const size_t before = open_fd_count();
  {
    Connection c;
    ASSERT_TRUE(send_part(c.runtime, "{\"ociVersion\":", {c.listener}));
    const size_t in_flight = open_fd_count();
    ReceivedState got;
    std::string why;
    const auto start = Clock::now();
    EXPECT_FALSE(receive_container_state(c.agent, got, why, 300));
    const auto took = Clock::now() - start;
    EXPECT_GE(took, 300ms);
    EXPECT_LT(took, 300ms + 2s);  // slack for a loaded machine
    EXPECT_NE(why.find("did not close the connection within 300 ms (14 bytes received)"),
              std::string::npos)
        << why;
    EXPECT_TRUE(got.fds.empty());
    EXPECT_EQ(open_fd_count(), in_flight);
  }
  EXPECT_EQ(open_fd_count(), before);
}

TEST(StateSocket, TricklingPeerCannotExtendTheDeadline) {
  Connection c;
  std::atomic<bool> stop = false;
  std::thread runtime([&] {
    while (!stop && send_part(c.runtime, " ")) std::this_thread::sleep_for(5ms);
  });
  ReceivedState got;
  std::string why;
  const auto start = Clock::now();
  EXPECT_FALSE(receive_container_state(c.agent, got, why, 300));
  const auto took = Clock::now() - start;
  stop = true;
  runtime.join();
  EXPECT_LT(took, 300ms + 2s);
  EXPECT_NE(why.find("did not close the connection"), std::string::npos) << why;
}

TEST(StateSocket, ClosingWithoutAStateIsRefused) {
  Connection c;
  c.hang_up();
  ReceivedState got;
  std::string why;
  EXPECT_FALSE(receive_container_state(c.agent, got, why, 5000));
  EXPECT_EQ(why, "the runtime closed the connection without sending a state");
}

TEST(StateSocket, NotAConnectionIsAnErrorNotAWait) {
  Connection c;
  ASSERT_EQ(::write(c.pipe_write, "x", 1), 1);
  ReceivedState got;
  std::string why;
  const auto start = Clock::now();
  EXPECT_FALSE(receive_container_state(c.listener, got, why, 5000));
  EXPECT_EQ(why.rfind("recvmsg: ", 0), 0u) << why;
  EXPECT_FALSE(receive_container_state(-1, got, why, 5000));
  EXPECT_EQ(why, "no connection (fd -1)");
  EXPECT_LT(Clock::now() - start, 2s);
}

void on_alarm(int) {}

TEST(StateSocket, SignalsDoNotCutTheWaitShort) {
  // poll() and recvmsg() fail with EINTR on every signal, SA_RESTART or not.
  struct sigaction action {
  }, previous{};
  action.sa_handler = on_alarm;
  ASSERT_EQ(::sigaction(SIGALRM, &action, &previous), 0);
  // The runtime's thread does not take the signals: only the receiving thread is interrupted.
  sigset_t alarm, old_mask;
  sigemptyset(&alarm);
  sigaddset(&alarm, SIGALRM);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &alarm, &old_mask), 0);
  Connection c;
  std::thread runtime([&] {
    std::this_thread::sleep_for(200ms);
    EXPECT_TRUE(send_part(c.runtime, kState, {c.listener}));
    c.hang_up();
  });
  ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr), 0);
  const itimerval every_10ms{{0, 10000}, {0, 10000}};
  ASSERT_EQ(::setitimer(ITIMER_REAL, &every_10ms, nullptr), 0);

  ReceivedState got;
  std::string why;
  const bool received = receive_container_state(c.agent, got, why, 10000);

  const itimerval off{};
  ::setitimer(ITIMER_REAL, &off, nullptr);
  runtime.join();
  ::sigaction(SIGALRM, &previous, nullptr);
  EXPECT_TRUE(received) << why;
  EXPECT_EQ(got.json, kState);
  EXPECT_EQ(got.fds.size(), 1u);
  close_all(got.fds);
}

TEST(StateSocket, PeerCredentialsAreTheConnectingProcess) {
  Connection c;
  const auto cred = peer_credentials(c.agent);
  ASSERT_TRUE(cred);
  EXPECT_EQ(cred->pid, ::getpid());
  EXPECT_EQ(cred->uid, ::getuid());
  EXPECT_EQ(cred->gid, ::getgid());
  EXPECT_FALSE(peer_credentials(c.listener));
}

}  // namespace
}  // namespace gdrproxy::proxy
