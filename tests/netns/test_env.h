// Test scaffolding for the rail launcher: real network namespaces, veth and bridges, set up with
// `ip` (tests may use it; the product may not) and always torn down by RAII, even when a test
// fails. Names carry the test's pid so parallel CTest runs never collide.
//
// The idea not to miss: "the host" in these tests is itself a namespace the test creates
// ("<prefix>h<pid>"), so nothing outside the test's own namespaces is ever touched.
#pragma once

#include <string>
#include <vector>

namespace gdrproxy::netns::test {

struct CmdResult {
  int status = -1;  // exit status, or -1 if it did not exit normally
  std::string out;  // stdout and stderr together
};

// Runs `cmd` with /bin/sh -c. Never throws.
CmdResult sh(const std::string& cmd);
// Runs `cmd` and fails the current test (with its output) unless it exits 0.
std::string must(const std::string& cmd);

// A uniquely named network namespace that is deleted in the destructor.
class ScopedNetns {
 public:
  explicit ScopedNetns(const std::string& prefix);
  ~ScopedNetns();
  ScopedNetns(const ScopedNetns&) = delete;
  ScopedNetns& operator=(const ScopedNetns&) = delete;
  const std::string& name() const { return name_; }
  std::string path() const { return "/run/netns/" + name_; }
  // "ip -n <name> " prefix and "ip netns exec <name> " prefix.
  std::string ip() const { return "ip -n " + name_ + " "; }
  std::string exec() const { return "ip netns exec " + name_ + " "; }
  // Deletes the namespace now (the destructor then does nothing).
  void destroy();

 private:
  std::string name_;
  bool alive_ = true;
};

// A "host" namespace with `rails` veth rails rdma0..N-1 on 192.0.2.0/24 (MTU 4200) and eth0 on
// 198.51.100.0/24 carrying the default route, their peers on one bridge in a "fabric"
// namespace, plus extra routes, a policy rule and a non-default sysctl.
struct HostTopology {
  explicit HostTopology(int rails, const std::string& prefix = "gn");
  ScopedNetns fabric;
  ScopedNetns host;
  int rails;
  std::vector<std::string> rail_names() const;
  std::string rail_list() const;  // "rdma0,rdma1,..."
};

// Everything restore must bring back, as text: `ip -j addr`, `ip -j route show table all` (both
// families), `ip -j rule` (both families) and the journaled sysctls of every rail.
// IPv6 routes the kernel makes itself (fe80::/64, ff00::/8) are listed sorted: among interfaces
// of equal metric their order is only the order the interfaces came up in.
std::string dump_state(const ScopedNetns& ns, const std::vector<std::string>& ifaces);

// Polls dump_state for up to `timeout_ms` until it equals `want` (the kernel reports a veth's
// operstate UP a moment after the link is set up). Returns the last dump.
std::string settle_to(const ScopedNetns& ns, const std::vector<std::string>& ifaces,
                      const std::string& want, int timeout_ms = 3000);

// Path of the gdrproxy binary under test.
std::string gdrproxy();
// gdrproxy-testkit: `gdrproxy-testkit netns ...` has the fault points
// (tests/testkit/netns_steps.h).
std::string testkit();

// A fresh directory under /tmp removed (recursively) in the destructor.
class ScopedDir {
 public:
  ScopedDir();
  ~ScopedDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace gdrproxy::netns::test
