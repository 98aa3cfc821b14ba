// ProcessMemory's read-ahead window: bytes served from it are the ones a direct read would give,
// it never reaches past the page of the read (so a request at the end of a mapping is read), and
// a request that truly crosses into an unmapped page still fails. Reads this test process itself
// (process_vm_readv on one's own pid) and one /proc/<tid>/fd lookup through ProcFdDirs, and
// checks that bytes primed from a trap copy answer reads inside them only.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstring>

#include <gtest/gtest.h>

#include "proxy/engine/proc_fd_dirs.h"
#include "proxy/mem/process_memory.h"

namespace gdrproxy::proxy {
namespace {

// Two pages; the second is unmapped, so the first page's end is the end of the mapping.
struct LastPage {
  LastPage() {
    base = static_cast<uint8_t*>(
        ::mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ::munmap(base + 4096, 4096);
    for (int i = 0; i < 4096; ++i) base[i] = static_cast<uint8_t>(i * 7);
  }
  ~LastPage() { ::munmap(base, 4096); }
  uint64_t at(size_t off) const { return reinterpret_cast<uint64_t>(base + off); }
  uint8_t* base;
};

TEST(ProcessMemory, LaterReadsInsideTheWindowGiveTheSameBytesAsDirectReads) {
  LastPage p;
  ProcessMemory mem(::getpid());
  std::array<uint8_t, 24> header{};
  ASSERT_TRUE(mem.read(p.at(100), header));
  EXPECT_EQ(0, std::memcmp(header.data(), p.base + 100, header.size()));
  // What follows the header, as uverbs' attributes do, and a read at the window's very end.
  std::array<uint8_t, 64> attrs{};
  ASSERT_TRUE(mem.read(p.at(124), attrs));
  EXPECT_EQ(0, std::memcmp(attrs.data(), p.base + 124, attrs.size()));
  std::array<uint8_t, 8> tail{};
  ASSERT_TRUE(mem.read(p.at(100 + 512 - 8), tail));
  EXPECT_EQ(0, std::memcmp(tail.data(), p.base + 604, tail.size()));
  // Past the window: a fresh read, still right.
  ASSERT_TRUE(mem.read(p.at(1000), attrs));
  EXPECT_EQ(0, std::memcmp(attrs.data(), p.base + 1000, attrs.size()));
}

TEST(ProcessMemory, ARequestAtTheEndOfAMappingIsReadWithoutReadingAhead) {
  LastPage p;
  ProcessMemory mem(::getpid());
  std::array<uint8_t, 16> last{};
  ASSERT_TRUE(mem.read(p.at(4096 - 16), last));
  EXPECT_EQ(0, std::memcmp(last.data(), p.base + 4096 - 16, last.size()));
}

TEST(ProcessMemory, ARequestCrossingIntoAnUnmappedPageFails) {
  LastPage p;
  ProcessMemory mem(::getpid());
  std::array<uint8_t, 32> across{};
  EXPECT_FALSE(mem.read(p.at(4096 - 16), across));
  // Nor does a window filled just before serve bytes it never held.
  std::array<uint8_t, 8> in{};
  ASSERT_TRUE(mem.read(p.at(4096 - 24), in));
  EXPECT_FALSE(mem.read(p.at(4096 - 16), across));
}

TEST(ProcFdDirs, StatsAnFdOfAThreadAndFailsOnceItIsClosed) {
  ProcFdDirs dirs;
  // A high number: the lowest free one could be taken by the cache's own directory fd.
  const int fd = ::fcntl(::open("/dev/null", O_RDONLY | O_CLOEXEC), F_DUPFD_CLOEXEC, 900);
  ASSERT_GE(fd, 900);
  struct statx stx {};
  ASSERT_TRUE(dirs.stat_fd(::gettid(), fd, stx));
  EXPECT_TRUE(S_ISCHR(stx.stx_mode));
  EXPECT_EQ(1u, stx.stx_rdev_major);
  EXPECT_EQ(3u, stx.stx_rdev_minor);
  ::close(fd);
  // The cached directory now answers that the fd is gone.
  EXPECT_FALSE(dirs.stat_fd(::gettid(), fd, stx));
  EXPECT_EQ(1u, dirs.size());
}

TEST(ProcFdDirs, ADeadThreadsDirectoryNeverAnswersForItsTid) {
  ProcFdDirs dirs;
  const pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_GT(child, 0);
  struct statx stx {};
  ASSERT_TRUE(dirs.stat_fd(child, 0, stx));
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  // The child's table is gone: no answer, and the stale entry is dropped.
  EXPECT_FALSE(dirs.stat_fd(child, 0, stx));
  EXPECT_EQ(0u, dirs.size());
}

// Primed bytes (a trap copy) serve the reads inside them without asking the kernel: here the
// process they were "copied" from is gone, so only the primed bytes can answer, and a read that
// reaches past them fails as a read of that process would.
TEST(ProcessMemory, PrimedBytesServeReadsInsideThemAndNothingElse) {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);
  std::array<uint8_t, 64> copied;
  for (size_t i = 0; i < copied.size(); ++i) copied[i] = static_cast<uint8_t>(0xA0 + i);
  constexpr uint64_t kAt = 0x7f0000001000;
  ProcessMemory mem(child);
  mem.prime(kAt, copied);
  std::array<uint8_t, 16> out{};
  ASSERT_TRUE(mem.read(kAt + 8, out));
  EXPECT_EQ(0, std::memcmp(out.data(), copied.data() + 8, out.size()));
  ASSERT_TRUE(mem.read(kAt + 48, out));  // the last 16 bytes
  EXPECT_EQ(copied[48], out[0]);
  EXPECT_FALSE(mem.read(kAt + 49, out));  // one byte past the copy
  EXPECT_FALSE(mem.read(kAt - 1, std::span<uint8_t>(out.data(), 1)));
}

}  // namespace
}  // namespace gdrproxy::proxy
