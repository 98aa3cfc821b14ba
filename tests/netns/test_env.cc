// Namespace/veth/bridge scaffolding for the rail launcher tests (see test_env.h).
#include "test_env.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

namespace gdrproxy::netns::test {

CmdResult sh(const std::string& cmd) {
  CmdResult r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string must(const std::string& cmd) {
  CmdResult r = sh(cmd);
  EXPECT_EQ(r.status, 0) << "command failed: " << cmd << "\n" << r.out;
  return r.out;
}

ScopedNetns::ScopedNetns(const std::string& prefix) {
  static int counter = 0;
  name_ = prefix + std::to_string(getpid()) + "x" + std::to_string(counter++);
  CmdResult r = sh("ip netns add " + name_);
  if (r.status != 0) throw std::runtime_error("ip netns add " + name_ + ": " + r.out);
  // No duplicate address detection: a freshly up interface would show "tentative" IPv6
  // addresses for a second and make dumps differ for reasons that are not the launcher's.
  sh(exec() + "sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0");
  sh(ip() + "link set lo up");
}

ScopedNetns::~ScopedNetns() {
  destroy();
}

void ScopedNetns::destroy() {
  if (alive_) sh("ip netns del " + name_);
  alive_ = false;
}

HostTopology::HostTopology(int n, const std::string& prefix)
    : fabric(prefix + "f"), host(prefix + "h"), rails(n) {
  must(fabric.ip() + "link add br0 type bridge && " + fabric.ip() + "link set br0 up");
  for (int i = 0; i < rails; ++i) {
    std::string r = "rdma" + std::to_string(i), p = "p" + std::to_string(i);
    must(host.ip() + "link add name " + r + " type veth peer name " + p + " netns " +
         fabric.name());
    must(fabric.ip() + "link set " + p + " master br0 up");
    must(host.ip() + "link set " + r + " mtu 4200");
    must(host.ip() + "addr add 192.0.2." + std::to_string(10 + i) + "/24 dev " + r);
    must(host.ip() + "link set " + r + " up");
  }
  must(host.ip() + "link add name eth0 type veth peer name pe netns " + fabric.name());
  must(fabric.ip() + "link set pe master br0 up");
  must(host.ip() + "addr add 198.51.100.2/24 dev eth0 && " + host.ip() + "link set eth0 up");
  must(host.ip() + "route add default via 198.51.100.1 dev eth0");
  if (rails >= 2) {
    must(host.ip() + "addr add 192.0.2.200/24 dev rdma0");  // a secondary address
    must(host.ip() + "addr add 2001:db8::10/64 dev rdma0 nodad");
    must(host.ip() + "route add 203.0.113.0/25 via 192.0.2.1 dev rdma0 metric 50");
    must(host.ip() + "route add 203.0.113.128/25 via 192.0.2.1 dev rdma1 table 100");
    must(host.ip() + "route add 2001:db8:1::/64 via 2001:db8::1 dev rdma0");
    must(host.ip() + "rule add from 192.0.2.11 lookup 100 prio 500");
    must(host.ip() + "rule add iif rdma1 lookup 100 prio 501");
    must(host.exec() +
         "sysctl -qw net.ipv4.conf.rdma1.arp_ignore=2 net.ipv4.conf.rdma0.rp_filter=2");
  }
}

std::vector<std::string> HostTopology::rail_names() const {
  std::vector<std::string> v;
  for (int i = 0; i < rails; ++i) v.push_back("rdma" + std::to_string(i));
  return v;
}

std::string HostTopology::rail_list() const {
  std::string s;
  for (const auto& r : rail_names()) s += (s.empty() ? "" : ",") + r;
  return s;
}

namespace {

std::string routes_v6(const ScopedNetns& ns) {
  auto j = nlohmann::json::parse(sh(ns.ip() + "-6 -j route show table all").out);
  std::vector<std::string> kernel_made;
  nlohmann::json rest = nlohmann::json::array();
  for (const auto& r : j) {
    std::string dst = r.value("dst", "");
    if (r.value("protocol", "") == "kernel" && (dst == "fe80::/64" || dst == "ff00::/8"))
      kernel_made.push_back(r.dump());
    else
      rest.push_back(r);
  }
  std::sort(kernel_made.begin(), kernel_made.end());
  std::string out = rest.dump() + "\n";
  for (const auto& k : kernel_made) out += k + "\n";
  return out;
}

}  // namespace

std::string dump_state(const ScopedNetns& ns, const std::vector<std::string>& ifaces) {
  std::string out;
  out += "addr " + sh(ns.ip() + "-j addr").out;
  out += "route4 " + sh(ns.ip() + "-4 -j route show table all").out;
  out += "route6 " + routes_v6(ns);
  out += "rule4 " + sh(ns.ip() + "-4 -j rule").out;
  out += "rule6 " + sh(ns.ip() + "-6 -j rule").out;
  std::string script;
  for (const auto& i : ifaces)
    for (const char* k : {"arp_announce", "arp_ignore", "arp_filter", "rp_filter"})
      script += "echo " + i + "." + k + "=$(cat /proc/sys/net/ipv4/conf/" + i + "/" + k + ");";
  out += sh(ns.exec() + "sh -c '" + script + "'").out;
  return out;
}

std::string settle_to(const ScopedNetns& ns, const std::vector<std::string>& ifaces,
                      const std::string& want, int timeout_ms) {
  std::string got;
  for (int waited = 0; waited <= timeout_ms; waited += 50) {
    got = dump_state(ns, ifaces);
    if (got == want) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return got;
}

std::string gdrproxy() {
  return GDRPROXY_BIN;
}

std::string testkit() {
  return GDRPROXY_TESTKIT;
}

ScopedDir::ScopedDir() {
  char tmpl[] = "/tmp/gdrproxy-netns-test-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

ScopedDir::~ScopedDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace gdrproxy::netns::test
