// Netlink dumps while the namespace's links change: the kernel marks a dump that spans several
// reads and saw a change meanwhile as interrupted (NLM_F_DUMP_INTR). The idea not to miss: that
// is an ordinary event on a host where other containers' rails move in and out at the same time
// (a poststop hook failed on it under the agent soak), so the readers must read the dump again,
// never fail the hook. Here a shell adds and deletes a veth pair and an address without pause in a
// namespace with enough links that one dump takes several reads.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "netns/link_identity.h"
#include "netns/netns_fd.h"
#include "netns/nl.h"
#include "test_env.h"

namespace gdrproxy::netns::test {
namespace {

// A shell changing the namespace's links until destroyed.
class Churn {
 public:
  explicit Churn(const ScopedNetns& ns) {
    pid_ = ::fork();
    if (pid_ == 0) {
      const std::string ip = ns.ip();
      const std::string loop = "while :; do " + ip + "link add churn0 type veth peer churn1; " +
                               ip + "addr add 203.0.113.9/32 dev v0; " + ip + "link del churn0; " +
                               ip + "addr del 203.0.113.9/32 dev v0; done >/dev/null 2>&1";
      ::execl("/bin/sh", "sh", "-c", loop.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~Churn() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Churn(const Churn&) = delete;
  Churn& operator=(const Churn&) = delete;

 private:
  pid_t pid_ = -1;
};

TEST(DumpInterrupted, LinkAndAddressDumpsAreReadAgainNotFailed) {
  ScopedNetns ns("gdi");
  // 30 veth pairs, an address on each link: a link dump, and an address dump, take several reads.
  std::string batch;
  for (int i = 0; i < 60; i += 2)
    batch += "link add v" + std::to_string(i) + " type veth peer v" + std::to_string(i + 1) +
             "\naddr add 198.51.100." + std::to_string(i + 1) + "/32 dev v" + std::to_string(i) +
             "\naddr add 198.51.100." + std::to_string(i + 2) + "/32 dev v" +
             std::to_string(i + 1) + "\n";
  must("printf '" + batch + "' | " + ns.ip() + "-batch -");
  const NetnsFd target = NetnsFd::open_path(ns.path());
  Churn churn(ns);
  // Each reader made inside the namespace, as the hooks make theirs.
  target.run_inside([] {
    LinkReader links;
    NlSocket sock;
    for (int i = 0; i < 400; ++i) {
      std::vector<LinkIdentity> l;
      ASSERT_NO_THROW(l = links.links()) << "dump " << i;
      EXPECT_GE(l.size(), 61u);
      ObjList a;
      ASSERT_NO_THROW(a = sock.addrs()) << "dump " << i;
      EXPECT_GE(a.size(), 60u);
    }
  });
}

}  // namespace
}  // namespace gdrproxy::netns::test
