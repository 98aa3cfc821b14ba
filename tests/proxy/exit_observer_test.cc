// The BPF exit observer reports exactly the exits registered with it, whether the registration
// went to the thread's mapped slot or (the slot held by another thread) to the hash map, and the
// write()s of an fd whose registered open it watched (rdma_cm's commands), and it
// leaves nothing behind: its programs are attached through links it owns, and destroying the
// observer detaches every one (a long-running agent creates and drops many).
// Needs root and BPF; skipped (GTEST_SKIP) where the kernel refuses to load the program.
#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "proxy/observe/exit_observer.h"

namespace gdrproxy::proxy {
namespace {

// Whether a BPF link with this id is still alive on the host. The observer's own link ids are
// checked, not the host-wide count: other tests running beside this one attach and detach links.
bool link_alive(uint32_t id) {
  int fd = bpf_link_get_fd_by_id(id);
  if (fd < 0) return false;
  close(fd);
  return true;
}

TEST(ExitObserver, DestroyingItDetachesEveryProgram) {
  std::string why;
  auto observer = ExitObserver::open([](const gdrproxy_exit_event&) {}, why);
  if (!observer) GTEST_SKIP() << "BPF observer unavailable here: " << why;
  const std::vector<uint32_t> ids = observer->link_ids();
  ASSERT_FALSE(ids.empty());
  for (uint32_t id : ids) EXPECT_TRUE(link_alive(id)) << "link " << id;
  EXPECT_EQ(observer->lost(), 0u);
  observer.reset();
  for (uint32_t id : ids) EXPECT_FALSE(link_alive(id)) << "link " << id << " outlived the observer";
}

// One ioctl of this thread that returns at once (the exit the observer sees).
void one_ioctl(int fd) {
  int n = 0;
  ASSERT_EQ(::ioctl(fd, FIONREAD, &n), 0);
}

TEST(ExitObserver, ReportsEachRegisteredExitOnceFromTheSlotOrTheMap) {
  std::vector<gdrproxy_exit_event> got;
  std::string why;
  auto observer = ExitObserver::open([&](const gdrproxy_exit_event& e) { got.push_back(e); }, why);
  if (!observer) GTEST_SKIP() << "BPF observer unavailable here: " << why;
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const uint32_t tid = static_cast<uint32_t>(::gettid());
  // Above any pid_max, so no thread has it, and in the same slot as this thread.
  const uint32_t other = tid | (1u << 31);
  const ResultRegion none{};
  // What a session would pass: its id and an entry of its own; returned as given.
  const auto cookie = [](uint64_t seq) { return (uint64_t{7} << 32) | (seq * 3); };

  ASSERT_TRUE(observer->expect(tid, 101, cookie(101), none, none));  // the thread's slot
  one_ioctl(p[0]);
  // `other` holds that slot from now on, so the next one of this thread goes to the map.
  ASSERT_TRUE(observer->expect(other, 102, cookie(102), none, none));
  ASSERT_TRUE(observer->expect(tid, 103, cookie(103), none, none));
  one_ioctl(p[0]);
  observer->forget(other);
  ASSERT_TRUE(observer->expect(tid, 104, cookie(104), none, none));
  ASSERT_TRUE(observer->expect(tid, 105, cookie(105), none, none));  // replaces 104, never returned
  one_ioctl(p[0]);
  one_ioctl(p[0]);  // registered by nobody: not reported
  // Outputs are copied for a call that succeeded, and not for one that failed (never decoded).
  static uint64_t result = 0x1122334455667788;
  const ResultRegion out{reinterpret_cast<uint64_t>(&result), sizeof result};
  ASSERT_TRUE(observer->expect(tid, 106, cookie(106), none, out));
  one_ioctl(p[0]);
  ASSERT_TRUE(observer->expect(tid, 107, cookie(107), none, out));
  EXPECT_EQ(::ioctl(p[0], 0x7e57, 0), -1);  // no such request: ENOTTY
  observer->consume();

  std::vector<uint64_t> seqs;
  for (const gdrproxy_exit_event& e : got) {
    if (e.tid != tid) continue;
    seqs.push_back(e.seq);
    EXPECT_EQ(e.cookie, cookie(e.seq)) << "seq " << e.seq;
    if (e.seq == 107) {
      EXPECT_EQ(e.ret, -ENOTTY);
      EXPECT_EQ(e.len1, 0u) << "a failed call's outputs were copied";
      continue;
    }
    EXPECT_EQ(e.ret, 0);
    if (e.seq == 106) {
      ASSERT_EQ(e.len1, sizeof result);
      uint64_t copied;
      std::memcpy(&copied, e.region1, sizeof copied);
      EXPECT_EQ(copied, result);
    }
  }
  EXPECT_EQ(seqs, (std::vector<uint64_t>{101, 103, 105, 106, 107}));
  for (const gdrproxy_exit_event& e : got) EXPECT_NE(e.seq, 102u) << "a forgotten slot reported";
  EXPECT_EQ(observer->lost(), 0u);
  ::close(p[0]);
  ::close(p[1]);
}

// still_armed() tells a registration that waits for its exit from one whose exit has passed
// (taken by the program) or that a later registration of its thread replaced: the session gives
// up a record whose registration is no longer armed and whose result never came.
TEST(ExitObserver, SaysWhetherARegistrationStillWaits) {
  std::string why;
  auto observer = ExitObserver::open([](const gdrproxy_exit_event&) {}, why);
  if (!observer) GTEST_SKIP() << "BPF observer unavailable here: " << why;
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const uint32_t tid = static_cast<uint32_t>(::gettid());
  const uint32_t other = tid | (1u << 31);  // same slot, no such thread
  ASSERT_TRUE(observer->expect(tid, 301, 1, {}, {}));
  EXPECT_TRUE(observer->still_armed(tid, 301));
  EXPECT_FALSE(observer->still_armed(tid, 300));
  one_ioctl(p[0]);
  EXPECT_FALSE(observer->still_armed(tid, 301)) << "taken at its exit";
  ASSERT_TRUE(observer->expect(tid, 302, 1, {}, {}));
  ASSERT_TRUE(observer->expect(tid, 303, 1, {}, {}));
  EXPECT_FALSE(observer->still_armed(tid, 302)) << "replaced by the thread's next";
  EXPECT_TRUE(observer->still_armed(tid, 303));
  observer->forget(tid);
  EXPECT_FALSE(observer->still_armed(tid, 303));
  // In the map (the slot held by another thread), the same.
  ASSERT_TRUE(observer->expect(other, 304, 1, {}, {}));
  ASSERT_TRUE(observer->expect(tid, 305, 1, {}, {}));
  EXPECT_TRUE(observer->still_armed(tid, 305));
  EXPECT_TRUE(observer->still_armed(other, 304));
  one_ioctl(p[0]);
  EXPECT_FALSE(observer->still_armed(tid, 305)) << "taken from the map at its exit";
  observer->forget(other);
  EXPECT_FALSE(observer->still_armed(other, 304));
  observer->consume();
  ::close(p[0]);
  ::close(p[1]);
}

TEST(ExitObserver, WatchesTheWritesOfAnOpenedFd) {
  std::vector<gdrproxy_exit_event> got;
  std::string why;
  auto observer = ExitObserver::open([&](const gdrproxy_exit_event& e) { got.push_back(e); }, why);
  if (!observer) GTEST_SKIP() << "BPF observer unavailable here: " << why;
  const uint32_t tid = static_cast<uint32_t>(::gettid());
  // An open registered as rdma_cm's: at its exit the program watches the new fd's writes.
  ASSERT_TRUE(observer->expect(tid, 201, 1, {}, {}, true));
  const int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "cmd", 3), 3);
  observer->unwatch_cm_fd(static_cast<uint32_t>(::getpid()), static_cast<uint32_t>(fd));
  ASSERT_EQ(::write(fd, "not seen", 8), 8);
  ::close(fd);
  observer->consume();

  std::vector<std::string> writes;
  bool opened = false;
  for (const gdrproxy_exit_event& e : got) {
    if (e.tid != tid) continue;
    if (e.kind == GDRPROXY_EVENT_RESULT && e.seq == 201) opened = e.ret == fd;
    if (e.kind == GDRPROXY_EVENT_CM_WRITE) {
      EXPECT_EQ(e.fd, static_cast<uint32_t>(fd));
      EXPECT_EQ(e.ret, 3);
      writes.emplace_back(reinterpret_cast<const char*>(e.region0), e.len0);
    }
  }
  EXPECT_TRUE(opened) << "the open's result was not reported";
  EXPECT_EQ(writes, std::vector<std::string>{"cmd"});
}

// The observer's `pending` map, created after map id `after` (by the observer just opened).
int pending_map_after(uint32_t after) {
  uint32_t id = after;
  while (bpf_map_get_next_id(id, &id) == 0) {
    const int fd = bpf_map_get_fd_by_id(id);
    if (fd < 0) continue;
    bpf_map_info info{};
    uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && std::string(info.name) == "pending")
      return fd;
    ::close(fd);
  }
  return -1;
}

TEST(ExitObserver, AStaleWriteEntryCompletesNoOtherCall) {
  // A guest kernel may skip a program (its recursion guard): a watched write's exit skipped
  // leaves the thread's entry behind. Planted here as that kernel would leave it: the thread's
  // next, unwatched write and its next ioctl must not be reported with it.
  uint32_t last = 0, id = 0;
  while (bpf_map_get_next_id(id, &id) == 0) last = id;
  std::vector<gdrproxy_exit_event> got;
  std::string why;
  auto observer = ExitObserver::open([&](const gdrproxy_exit_event& e) { got.push_back(e); }, why);
  if (!observer) GTEST_SKIP() << "BPF observer unavailable here: " << why;
  const int pending = pending_map_after(last);
  ASSERT_GE(pending, 0) << "the observer's pending map was not found";
  const uint32_t tid = static_cast<uint32_t>(::gettid());
  static const char kStale[] = "a stale command";
  gdrproxy_pending stale{};
  stale.kind = GDRPROXY_EVENT_CM_WRITE;
  stale.fd = 999;
  stale.addr0 = reinterpret_cast<uint64_t>(kStale);
  stale.len0 = sizeof kStale;
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ASSERT_EQ(bpf_map_update_elem(pending, &tid, &stale, BPF_ANY), 0);
  ASSERT_EQ(::write(p[1], "x", 1), 1);  // unwatched: drops the entry at its entry
  gdrproxy_pending left{};
  EXPECT_NE(bpf_map_lookup_elem(pending, &tid, &left), 0) << "the stale entry is still there";
  ASSERT_EQ(bpf_map_update_elem(pending, &tid, &stale, BPF_ANY), 0);
  int queued = 0;
  ASSERT_EQ(::ioctl(p[0], FIONREAD, &queued), 0);  // not a write: leaves it alone
  EXPECT_EQ(bpf_map_lookup_elem(pending, &tid, &left), 0) << "an ioctl's exit took a write's entry";
  bpf_map_delete_elem(pending, &tid);
  ::close(pending);
  ::close(p[0]);
  ::close(p[1]);
  observer->consume();
  for (const gdrproxy_exit_event& e : got)
    EXPECT_NE(e.tid, tid) << "reported with the stale entry: kind " << e.kind << ", fd " << e.fd
                          << ", result " << e.ret;
}

}  // namespace
}  // namespace gdrproxy::proxy
