// The BPF exit observer leaves nothing behind: its programs are attached through links it owns,
// and destroying the observer detaches every one (a long-running agent creates and drops many).
// Needs root and BPF; skipped (GTEST_SKIP) where the kernel refuses to load the program.
#include <bpf/bpf.h>
#include <gtest/gtest.h>

#include "proxy/observe/exit_observer.h"

namespace gdrproxy::proxy {
namespace {

// BPF links alive on this host, by id.
size_t live_links() {
  size_t n = 0;
  __u32 id = 0;
  while (bpf_link_get_next_id(id, &id) == 0) ++n;
  return n;
}

TEST(ExitObserver, DestroyingItDetachesEveryProgram) {
  const size_t before = live_links();
  std::string why;
  auto observer = ExitObserver::open([](const gdrproxy_exit_event&) {}, why);
  if (!observer) GTEST_SKIP() << "BPF observer unavailable here: " << why;
  EXPECT_GT(live_links(), before);
  EXPECT_EQ(observer->lost(), 0u);
  observer.reset();
  EXPECT_EQ(live_links(), before) << "links outlived the observer";
}

}  // namespace
}  // namespace gdrproxy::proxy
