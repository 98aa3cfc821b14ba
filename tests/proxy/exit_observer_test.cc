// The BPF exit observer leaves nothing behind: its programs are attached through links it owns,
// and destroying the observer detaches every one (a long-running agent creates and drops many).
// Needs root and BPF; skipped (GTEST_SKIP) where the kernel refuses to load the program.
#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <unistd.h>

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

}  // namespace
}  // namespace gdrproxy::proxy
