// The fd store's holder (proxy/agent/fd_store_holder.h), a real forked holder on a socket in a
// temporary directory: a PUT its client puts again (its first answer came too late) keeps one
// entry under one key, so the next agent never adopts a process twice; another listener is a
// new entry. Root is not needed.
#include "proxy/agent/fd_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gdrproxy::proxy {
namespace {

class FdStoreHolder : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/tmp/gdrproxy-fdstore-XXXXXX";
    dir_ = ::mkdtemp(t);
    path_ = dir_ + "/store.sock";
    ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  }
  void TearDown() override {
    // The holder outlives its client by design: this process is its subreaper, and ends it.
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      const std::string name = e.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream stat(e.path() / "stat");
      std::string line;
      std::getline(stat, line);
      const size_t close = line.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream rest(line.substr(close + 2));
      char state;
      pid_t ppid = 0;
      rest >> state >> ppid;
      if (ppid == ::getpid()) {
        const pid_t pid = static_cast<pid_t>(std::stol(name));
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
    std::filesystem::remove_all(dir_);
  }
  // One stand-in process entry: a pipe's read end as its listener (the holder watches it for a
  // hang-up), this process's pidfd, a memfd as its received-id page.
  struct Entry {
    UniqueFd listener, writer, pidfd, ids;
  };
  static Entry entry() {
    int p[2];
    EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
    return {UniqueFd(p[0]), UniqueFd(p[1]),
            UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0))),
            UniqueFd(::memfd_create("ids", MFD_CLOEXEC))};
  }
  std::string dir_, path_;
};

TEST_F(FdStoreHolder, AListenerPutAgainKeepsItsOneEntry) {
  FdStoreClient client = FdStoreClient::connect_or_start(path_);
  ASSERT_TRUE(client.names_entries());
  const Entry a = entry();
  const auto first = client.put("{\"a\":1}", {a.listener.get(), a.pidfd.get(), a.ids.get()});
  ASSERT_TRUE(first);
  // The same open file through another descriptor, as a late re-put sends it.
  const UniqueFd again(::fcntl(a.listener.get(), F_DUPFD_CLOEXEC, 0));
  const auto second = client.put("{\"a\":1}", {again.get(), a.pidfd.get(), a.ids.get()});
  ASSERT_TRUE(second);
  EXPECT_EQ(*second, *first);
  const Entry b = entry();
  const auto other = client.put("{\"b\":1}", {b.listener.get(), b.pidfd.get(), b.ids.get()});
  ASSERT_TRUE(other);
  EXPECT_NE(*other, *first);
  const std::vector<StoredListener> kept = client.take_all();
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_NE(kept[0].key, kept[1].key);
}

}  // namespace
}  // namespace gdrproxy::proxy
