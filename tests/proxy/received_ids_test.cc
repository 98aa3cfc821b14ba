// ReceivedIdPage against a real seccomp listener: a receiver that took a call and died (here: a
// call received and never answered) leaves it pending, and the next receiver's probes answer it
// with kStrandedErrno, whether the id was stored or not (a kill between RECV and the store), and
// never answer the call the new receiver is itself handling.
#include "proxy/engine/received_ids.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "base/error.h"
#include "proxy/engine/fd_passing.h"
#include "proxy/engine/seccomp_notify.h"

namespace gdrproxy::proxy {
namespace {

// A child whose getppid() calls trap to a listener (handed to us), made by `threads` threads
// one after the other (each starts once the previous one has trapped, `gap_ms` apart); each
// writes its call's result ("<ret> <errno>\n") to `results`.
struct Child {
  pid_t pid = -1;
  UniqueFd listener, results;
  ~Child() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

void start_child(Child& c, int threads, int gap_ms) {
  int sp[2], rp[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
  EXPECT_EQ(::pipe2(rp, O_CLOEXEC), 0);
  c.pid = ::fork();
  if (c.pid == 0) {
    sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog{static_cast<unsigned short>(sizeof f / sizeof f[0]), f};
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    const int l = static_cast<int>(
        ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
    if (l < 0 || !send_fd(sp[1], l)) _exit(1);
    ::close(l);
    std::vector<std::thread> t;
    for (int i = 0; i < threads; ++i) {
      t.emplace_back([&] {
        const long r = ::syscall(SYS_getppid);
        const std::string line = std::to_string(r) + " " + std::to_string(r < 0 ? errno : 0) + "\n";
        (void)!::write(rp[1], line.data(), line.size());
      });
      ::usleep(gap_ms * 1000);
    }
    for (auto& th : t) th.join();
    _exit(0);
  }
  ::close(sp[1]);
  ::close(rp[1]);
  std::string why;
  c.listener.reset(recv_fd(sp[0], why));
  c.results.reset(rp[0]);
  ::close(sp[0]);
}

uint64_t recv_one(int listener) {
  seccomp_notif n{};
  pollfd p{listener, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 5000), 1);
  EXPECT_EQ(::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &n), 0) << std::strerror(errno);
  return n.id;
}

// One call received the way a session's receiver does: RECV writes it into the page itself.
// Its id; 0 on failure (said).
uint64_t recv_into_page(const ReceivedIdPage& page, int listener) {
  void* buf = page.recv_buffer(sizeof(seccomp_notif));
  EXPECT_NE(buf, nullptr);
  pollfd p{listener, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 5000), 1);
  if (!buf || ::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, buf) != 0) {
    ADD_FAILURE() << "RECV: " << std::strerror(errno);
    return 0;
  }
  return static_cast<seccomp_notif*>(buf)->id;
}

std::string result(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 5000) != 1) return "(none)";
  char b[64];
  const ssize_t n = ::read(fd, b, sizeof b);
  return n > 0 ? std::string(b, static_cast<size_t>(n)) : "(eof)";
}

UniqueFd dup_of(int fd) {
  return UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
}

TEST(ReceivedIdPage, TheStoredCallLeftPendingIsAnsweredWithEintr) {
  Child c;
  start_child(c, 1, 0);
  ASSERT_TRUE(c.listener);
  ReceivedIdPage dead = ReceivedIdPage::create();
  EXPECT_FALSE(dead.recovering());
  const uint64_t id = recv_one(c.listener.get());
  dead.received(id);  // ... and the receiver dies before it answers
  ReceivedIdPage next = ReceivedIdPage::adopt(dup_of(dead.fd()));
  EXPECT_TRUE(next.recovering());
  EXPECT_EQ(next.probe(c.listener.get()), 1u);
  EXPECT_EQ(result(c.results.get()), "-1 " + std::to_string(EINTR) + "\n");
  EXPECT_FALSE(notif_id_valid(c.listener.get(), id));
}

// A receiver that RECVs into the page stores nothing itself: the kernel wrote the id there before
// RECV returned, so a kill right after RECV (before any store of the receiver's) strands nothing.
TEST(ReceivedIdPage, ACallReceivedIntoThePageIsAnsweredWithoutAnyStore) {
  Child c;
  start_child(c, 1, 0);
  ASSERT_TRUE(c.listener);
  ReceivedIdPage dead = ReceivedIdPage::create();
  const uint64_t id = recv_into_page(dead, c.listener.get());  // ... and the receiver is killed
  ASSERT_NE(id, 0u);
  ReceivedIdPage next = ReceivedIdPage::adopt(dup_of(dead.fd()));
  EXPECT_EQ(next.probe(c.listener.get()), 1u);
  EXPECT_EQ(result(c.results.get()), "-1 " + std::to_string(EINTR) + "\n");
  EXPECT_FALSE(notif_id_valid(c.listener.get(), id));
  EXPECT_EQ(dead.recv_buffer(kReceivedIdPageBytes + 1), nullptr);
}

// The kernel wrote the whole call into the page: the next supervisor takes it to handle again,
// once. A third one (the second died while handling it) finds it taken and fails it with EINTR;
// one adopted where the previous supervisor may still be inside the handling never takes it.
TEST(ReceivedIdPage, TheStrandedCallIsTakenToBeHandledAgainOnce) {
  Child c;
  start_child(c, 1, 0);
  ASSERT_TRUE(c.listener);
  ReceivedIdPage dead = ReceivedIdPage::create();
  const uint64_t id = recv_into_page(dead, c.listener.get());  // ... and the receiver is killed
  ASSERT_NE(id, 0u);

  // Where the previous one may still be inside it: not taken, failed.
  {
    ReceivedIdPage stuck = ReceivedIdPage::adopt(dup_of(dead.fd()), false);
    EXPECT_FALSE(stuck.take_stranded(c.listener.get(), sizeof(seccomp_notif)));
  }
  ReceivedIdPage next = ReceivedIdPage::adopt(dup_of(dead.fd()), true);
  const auto call = next.take_stranded(c.listener.get(), sizeof(seccomp_notif));
  ASSERT_TRUE(call);
  const auto& n = *reinterpret_cast<const seccomp_notif*>(call->data());
  EXPECT_EQ(n.id, id);
  EXPECT_EQ(n.data.nr, SYS_getppid);
  // The thread that trapped, one of the child's.
  EXPECT_TRUE(
      std::filesystem::exists("/proc/" + std::to_string(c.pid) + "/task/" + std::to_string(n.pid)));
  // Taken, not answered: it is still the caller's pending call.
  EXPECT_TRUE(notif_id_valid(c.listener.get(), id));

  // That supervisor dies too while handling it: the next fails it rather than take it again.
  ReceivedIdPage third = ReceivedIdPage::adopt(dup_of(dead.fd()), true);
  EXPECT_FALSE(third.take_stranded(c.listener.get(), sizeof(seccomp_notif)));
  EXPECT_EQ(third.probe(c.listener.get()), 1u);
  EXPECT_EQ(result(c.results.get()), "-1 " + std::to_string(EINTR) + "\n");
}

// Only the id was stored (a receiver with a buffer of its own): the call is not known, so it is
// failed, not handled again.
TEST(ReceivedIdPage, AStoredIdAloneIsNotHandledAgain) {
  Child c;
  start_child(c, 1, 0);
  ASSERT_TRUE(c.listener);
  ReceivedIdPage dead = ReceivedIdPage::create();
  dead.received(recv_one(c.listener.get()));
  ReceivedIdPage next = ReceivedIdPage::adopt(dup_of(dead.fd()), true);
  EXPECT_FALSE(next.take_stranded(c.listener.get(), sizeof(seccomp_notif)));
  EXPECT_EQ(next.probe(c.listener.get()), 1u);
  EXPECT_EQ(result(c.results.get()), "-1 " + std::to_string(EINTR) + "\n");
}

TEST(ReceivedIdPage, ACallReceivedButNotYetStoredIsFoundAboveTheStoredOne) {
  Child c;
  start_child(c, 2, 200);
  ASSERT_TRUE(c.listener);
  ReceivedIdPage dead = ReceivedIdPage::create();
  const uint64_t first = recv_one(c.listener.get());
  dead.received(first);
  ASSERT_EQ(notif_continue(c.listener.get(), first), 0);
  EXPECT_EQ(result(c.results.get()).back(), '\n');
  recv_one(c.listener.get());  // killed before its store
  ReceivedIdPage next = ReceivedIdPage::adopt(dup_of(dead.fd()));
  EXPECT_EQ(next.probe(c.listener.get()), 1u);
  EXPECT_EQ(result(c.results.get()), "-1 " + std::to_string(EINTR) + "\n");
}

TEST(ReceivedIdPage, FarBelowTheFirstReceivedIsAnsweredButNeverTheFirstItself) {
  // The stored id is further below the pending call than the probe before RECV reaches (calls
  // abandoned in between): the probe below the new receiver's first call finds it, and leaves
  // that first call to the new receiver.
  Child c;
  start_child(c, 2, 300);
  ASSERT_TRUE(c.listener);
  ReceivedIdPage dead = ReceivedIdPage::create();
  const uint64_t pending = recv_one(c.listener.get());
  dead.received(pending - 1000);
  ReceivedIdPage next = ReceivedIdPage::adopt(dup_of(dead.fd()));
  EXPECT_EQ(next.probe(c.listener.get()), 0u);
  const uint64_t first = recv_one(c.listener.get());
  ASSERT_GT(first, pending);
  EXPECT_EQ(next.probe_below(c.listener.get(), first), 1u);
  EXPECT_FALSE(next.recovering());
  EXPECT_EQ(result(c.results.get()), "-1 " + std::to_string(EINTR) + "\n");
  EXPECT_TRUE(notif_id_valid(c.listener.get(), first));
  EXPECT_EQ(notif_continue(c.listener.get(), first), 0);
  EXPECT_EQ(result(c.results.get()), std::to_string(::getpid()) + " 0\n");
}

TEST(ReceivedIdPage, AForeignFdIsNoPage) {
  EXPECT_THROW(ReceivedIdPage::adopt(UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC))), Error);
}

}  // namespace
}  // namespace gdrproxy::proxy
