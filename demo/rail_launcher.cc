// The rail-launcher step of the demo: stand-in rails in private network namespaces (see
// rail_launcher.h).
#include "demo/rail_launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/fib_rules.h>
#include <linux/if.h>
#include <linux/rtnetlink.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/rtnl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/lists.h"
#include "base/unique_fd.h"
#include "demo/spawn.h"
#include "netns/link_ops.h"
#include "netns/netns_fd.h"
#include "netns/nl.h"
#include "netns/records.h"
#include "netns/sysctl.h"

namespace gdrproxy::demo {
namespace {

namespace fs = std::filesystem;
using namespace gdrproxy::netns;  // the rail launcher's library: this is its demo

struct Rail {
  const char* netdev;
  const char* ibdev;
  const char* addr;
};
constexpr Rail kRails[] = {{"rdma0", "rxe0", "192.0.2.10/24"}, {"rdma1", "rxe1", "192.0.2.11/24"}};
constexpr unsigned kMtu = 4200;
constexpr const char* kRouteDst = "198.51.100.0/24";
constexpr const char* kRouteGateway = "192.0.2.1";
constexpr const char* kProfile = "multirail";
constexpr unsigned kWholeLimitS = 20;  // the whole rail-launcher demo
// One select/move/restore: 10 s at most.
const SpawnOptions kCommand{.standin = false, .limit_s = 10, .after_line = {}};
constexpr int kSettleMs = 3000;  // a veth reports carrier a moment after it is set up

std::vector<std::string> rail_names() {
  std::vector<std::string> v;
  for (const auto& r : kRails) v.push_back(r.netdev);
  return v;
}

// IPv6 off in a namespace the demo owns: the rails here carry IPv4 only (RoCE v2 over IPv4), and
// listings stay free of link-local addresses. Best effort: without IPv6 there is nothing to do.
void disable_ipv6_here() {
  for (const char* p : {"/proc/sys/net/ipv6/conf/all/disable_ipv6",
                        "/proc/sys/net/ipv6/conf/default/disable_ipv6"}) {
    UniqueFd fd(::open(p, O_WRONLY | O_CLOEXEC));
    if (!fd) continue;
    (void)!::write(fd.get(), "1\n", 2);
  }
}

// The stand-in container: a child asleep in a network namespace of its own. It dies with this
// process (PR_SET_PDEATHSIG) or when the destructor closes the pipe it waits on.
class Container {
 public:
  Container() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe", errno);
    UniqueFd ready_r(fds[0]), ready_w(fds[1]);
    if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe", errno);
    UniqueFd hold_r(fds[0]);
    hold_.reset(fds[1]);
    const pid_t parent = ::getpid();
    std::cout.flush();
    std::fflush(stdout);
    pid_ = ::fork();
    if (pid_ == 0) {
      // The child leaves through _exit only: no destructor runs there.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
      ready_r.reset();
      hold_.reset();
      char ok = ::unshare(CLONE_NEWNET) == 0 ? 1 : 0;
      if (ok) disable_ipv6_here();
      (void)!::write(ready_w.get(), &ok, 1);
      ready_w.reset();
      char c;
      while (::read(hold_r.get(), &c, 1) < 0 && errno == EINTR) {
      }
      ::_exit(0);
    }
    int fork_errno = errno;
    ready_w.reset();
    hold_r.reset();
    if (pid_ < 0) throw_errno("fork", fork_errno);  // hold_ and ready_r close as it unwinds
    char ok = 0;
    ssize_t n;
    while ((n = ::read(ready_r.get(), &ok, 1)) < 0 && errno == EINTR) {
    }
    ready_r.reset();
    if (n != 1 || !ok) {
      end();
      throw Error("the stand-in container could not get a network namespace of its own");
    }
  }
  ~Container() { end(); }
  Container(const Container&) = delete;
  Container& operator=(const Container&) = delete;
  pid_t pid() const { return pid_; }

 private:
  void end() {
    hold_.reset();
    if (pid_ > 0)
      while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
    pid_ = -1;
  }
  pid_t pid_ = -1;
  UniqueFd hold_;  // the child waits for this pipe to close
};

// --- the stand-in rails and their constructed sysfs --------------------------------------------

Json addr_record(const std::string& local) {
  return Json{{"family", "inet"}, {"local", local}, {"scope", RT_SCOPE_UNIVERSE}, {"flags", 0}};
}

Json gateway_route_record() {
  return Json{
      {"family", "inet"},
      {"table", RT_TABLE_MAIN},
      {"type", RTN_UNICAST},
      {"scope", RT_SCOPE_UNIVERSE},
      {"protocol", RTPROT_BOOT},
      {"priority", 0},
      {"tos", 0},
      {"dst", kRouteDst},
      {"metrics", Json::object()},
      {"nexthops", Json::array({{{"ifname", kRails[0].netdev}, {"gateway", kRouteGateway}}})}};
}

// The veth pair rdma0 <-> rdma1 with its MTU, addresses and a gateway route, made through the
// same libnl writers `move` and `restore` use.
void create_rails(const NlSocket& sock) {
  if (int rc = rtnl_link_veth_add(sock.get(), kRails[0].netdev, kRails[1].netdev, ::getpid());
      rc < 0)
    throw_nl(
        std::string("cannot create the veth pair ") + kRails[0].netdev + " <-> " + kRails[1].netdev,
        rc);
  for (const auto& r : kRails) {
    LinkPtr link = find_link(sock, r.netdev);
    if (!link) throw Error(std::string(r.netdev) + ": missing right after it was created");
    set_mtu(sock, link.get(), kMtu);
    set_up(sock, link.get(), true);
    add_addr(sock, rtnl_link_get_ifindex(link.get()), r.netdev, addr_record(r.addr));
  }
  CachePtr links = sock.links();
  add_route(sock, links.get(), gateway_route_record(), false);
}

std::string gid_text(const std::array<unsigned char, 16>& b) {
  char buf[48];
  std::snprintf(buf, sizeof(buf),
                "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return buf;
}

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p);
  out << text;
  if (!out) throw Error("cannot write " + p.string());
}

// <root>/class/infiniband/rxeN -> ../../devices/virtual/infiniband/rxeN, one Ethernet port whose
// GID table is what the kernel fills for a RoCE netdev: the link-local GID from the MAC and the
// IPv4-mapped GID of its address, each as RoCE v1 and v2, then empty slots (zero GID; their
// type/ndev files, which fail with EINVAL on a real kernel, are empty here).
void build_sysfs(const fs::path& root, const NlSocket& sock) {
  for (const auto& r : kRails) {
    LinkPtr link = find_link(sock, r.netdev);
    nl_addr* mac = link ? rtnl_link_get_addr(link.get()) : nullptr;
    if (!mac || nl_addr_get_len(mac) != 6) throw Error(std::string(r.netdev) + ": no MAC");
    const auto* m = static_cast<const unsigned char*>(nl_addr_get_binary_addr(mac));
    std::array<unsigned char, 16> ll{
        0xfe, 0x80, 0,    0,    0,    0,    0,   0, static_cast<unsigned char>(m[0] ^ 2),
        m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]};
    std::array<unsigned char, 16> v4{};
    v4[10] = v4[11] = 0xff;
    std::string ip(r.addr);
    ip = ip.substr(0, ip.find('/'));
    if (::inet_pton(AF_INET, ip.c_str(), &v4[12]) != 1) throw Error("bad address " + ip);
    const std::string ibdev = r.ibdev;
    const fs::path dev = root / "devices/virtual/infiniband" / ibdev;
    fs::create_directories(dev);
    fs::create_directories(root / "class/infiniband");
    fs::create_directory_symlink("../../devices/virtual/infiniband/" + ibdev,
                                 root / "class/infiniband" / ibdev);
    write_file(dev / "node_type", "1: CA\n");
    const fs::path port = dev / "ports/1";
    write_file(port / "link_layer", "Ethernet\n");
    write_file(port / "state", "4: ACTIVE\n");
    const std::vector<std::pair<std::string, std::string>> slots = {{gid_text(ll), "IB/RoCE v1"},
                                                                    {gid_text(ll), "RoCE v2"},
                                                                    {gid_text(v4), "IB/RoCE v1"},
                                                                    {gid_text(v4), "RoCE v2"}};
    for (size_t i = 0; i < 8; ++i) {
      const std::string n = std::to_string(i);
      const bool used = i < slots.size();
      write_file(port / "gids" / n, (used ? slots[i].first : gid_text({})) + "\n");
      write_file(port / "gid_attrs/types" / n, used ? slots[i].second + "\n" : "");
      write_file(port / "gid_attrs/ndevs" / n, used ? std::string(r.netdev) + "\n" : "");
    }
  }
}

// --- what a namespace holds, as text ----------------------------------------------------------

// "192.0.2.1" for a full-length prefix, "default" for a zero-length one, else "a/len".
std::string addr_text(const nl_addr* a) {
  if (!a) return "";
  std::string s = addr_to_string(a);
  unsigned prefix = nl_addr_get_prefixlen(const_cast<nl_addr*>(a));
  if (prefix == 0) return "default";
  if (prefix == nl_addr_get_len(const_cast<nl_addr*>(a)) * 8) return s.substr(0, s.find('/'));
  return s;
}

std::string table_text(unsigned table) {
  if (table == RT_TABLE_MAIN) return "main";
  if (table == RT_TABLE_LOCAL) return "local";
  if (table == RT_TABLE_DEFAULT) return "default";
  return std::to_string(table);
}

std::string family_text(int family) {
  return family == AF_INET    ? "inet"
         : family == AF_INET6 ? "inet6"
                              : "family" + std::to_string(family);
}

// A route the way `ip route` writes it. `full` adds every field the comparison must see.
std::string route_text(rtnl_route* r, nl_cache* links, bool full) {
  std::ostringstream o;
  char buf[64];
  if (full) o << family_text(rtnl_route_get_family(r)) << " ";
  if (int type = rtnl_route_get_type(r); type != RTN_UNICAST)
    o << nl_rtntype2str(type, buf, sizeof(buf)) << " ";
  o << addr_text(rtnl_route_get_dst(r));
  std::pair<std::ostringstream*, nl_cache*> ctx{&o, links};
  rtnl_route_foreach_nexthop(
      r,
      [](rtnl_nexthop* nh, void* arg) {
        auto* c = static_cast<std::pair<std::ostringstream*, nl_cache*>*>(arg);
        if (nl_addr* gw = rtnl_route_nh_get_gateway(nh)) *c->first << " via " << addr_text(gw);
        *c->first << " dev " << name_by_ifindex(c->second, rtnl_route_nh_get_ifindex(nh));
        if (unsigned w = rtnl_route_nh_get_weight(nh); w > 1) *c->first << " weight " << w;
        if (unsigned f = rtnl_route_nh_get_flags(nh); f) *c->first << " nhflags " << f;
      },
      &ctx);
  if (unsigned table = rtnl_route_get_table(r); table != RT_TABLE_MAIN || full)
    o << " table " << table_text(table);
  if (int proto = rtnl_route_get_protocol(r); proto != RTPROT_BOOT || full)
    o << " proto " << rtnl_route_proto2str(proto, buf, sizeof(buf));
  if (int scope = rtnl_route_get_scope(r); scope != RT_SCOPE_UNIVERSE || full)
    o << " scope " << rtnl_scope2str(scope, buf, sizeof(buf));
  if (nl_addr* src = rtnl_route_get_pref_src(r)) o << " src " << addr_text(src);
  if (uint32_t prio = rtnl_route_get_priority(r)) o << " metric " << prio;
  if (full) {
    o << " tos " << unsigned(rtnl_route_get_tos(r));
    for (int m = 1; m <= RTAX_MAX; ++m) {
      uint32_t v = 0;
      if (rtnl_route_get_metric(r, m, &v) == 0) o << " rtax" << m << "=" << v;
    }
  }
  return o.str();
}

std::string rule_text(rtnl_rule* r, bool full) {
  std::ostringstream o;
  if (full) o << family_text(rtnl_rule_get_family(r)) << " ";
  o << rtnl_rule_get_prio(r) << ": from ";
  nl_addr* src = rtnl_rule_get_src(r);
  o << (src ? addr_text(src) : "all");
  if (nl_addr* dst = rtnl_rule_get_dst(r)) o << " to " << addr_text(dst);
  if (const char* iif = rtnl_rule_get_iif(r)) o << " iif " << iif;
  if (const char* oif = rtnl_rule_get_oif(r)) o << " oif " << oif;
  if (uint32_t mark = rtnl_rule_get_mark(r))
    o << " fwmark " << mark << "/" << rtnl_rule_get_mask(r);
  if (rtnl_rule_get_action(r) == FR_ACT_TO_TBL)
    o << " lookup " << table_text(rtnl_rule_get_table(r));
  else
    o << " action " << unsigned(rtnl_rule_get_action(r));
  return o.str();
}

bool is_default_rule(rtnl_rule* r) {
  const uint32_t prio = rtnl_rule_get_prio(r), table = rtnl_rule_get_table(r);
  return rtnl_rule_get_action(r) == FR_ACT_TO_TBL && !rtnl_rule_get_src(r) &&
         !rtnl_rule_get_dst(r) && !rtnl_rule_get_iif(r) && !rtnl_rule_get_oif(r) &&
         ((prio == 0 && table == RT_TABLE_LOCAL) || (prio == 32766 && table == RT_TABLE_MAIN) ||
          (prio == 32767 && table == RT_TABLE_DEFAULT));
}

std::string sysctl_text(const std::string& ifname) {
  std::string s;
  for (const auto& key : journaled_sysctl_keys())
    s += (s.empty() ? "" : " ") + key + "=" + std::to_string(read_conf_sysctl(ifname, key));
  return s;
}

// Every fact about the calling thread's namespace that `restore` must bring back, one line each:
// links, addresses, routes of every table, policy rules, and the ARP sysctls of the rails.
std::vector<std::string> full_state() {
  NlSocket sock;
  CachePtr links = sock.links();
  std::vector<std::string> out;
  char buf[128];
  for (nl_object* o = nl_cache_get_first(links.get()); o; o = nl_cache_get_next(o)) {
    auto* l = reinterpret_cast<rtnl_link*>(o);
    std::ostringstream s;
    s << "link " << rtnl_link_get_name(l) << " ifindex " << rtnl_link_get_ifindex(l) << " mac "
      << link_mac(l) << " mtu " << rtnl_link_get_mtu(l) << " flags <"
      << rtnl_link_flags2str(rtnl_link_get_flags(l), buf, sizeof(buf)) << "> operstate "
      << rtnl_link_operstate2str(rtnl_link_get_operstate(l), buf, sizeof(buf)) << " peer "
      << rtnl_link_get_link(l);
    out.push_back(s.str());
  }
  for (const auto& o : sock.addrs()) {
    auto* a = reinterpret_cast<rtnl_addr*>(o.get());
    std::ostringstream s;
    s << "addr " << name_by_ifindex(links.get(), rtnl_addr_get_ifindex(a)) << " "
      << addr_to_string(rtnl_addr_get_local(a));
    if (nl_addr* p = rtnl_addr_get_peer(a)) s << " peer " << addr_to_string(p);
    if (nl_addr* b = rtnl_addr_get_broadcast(a)) s << " brd " << addr_to_string(b);
    s << " scope " << rtnl_scope2str(rtnl_addr_get_scope(a), buf, sizeof(buf)) << " flags <"
      << rtnl_addr_flags2str(rtnl_addr_get_flags(a), buf, sizeof(buf)) << ">";
    if (const char* label = rtnl_addr_get_label(a)) s << " label " << label;
    s << " valid " << rtnl_addr_get_valid_lifetime(a) << " preferred "
      << rtnl_addr_get_preferred_lifetime(a);
    out.push_back(s.str());
  }
  for (const auto& o : sock.routes()) {
    auto* r = reinterpret_cast<rtnl_route*>(o.get());
    if (rtnl_route_get_flags(r) & RTM_F_CLONED) continue;
    out.push_back("route " + route_text(r, links.get(), true));
  }
  for (const auto& o : sock.rules())
    out.push_back("rule " + rule_text(reinterpret_cast<rtnl_rule*>(o.get()), true));
  for (const auto& name : rail_names())
    if (ifindex_by_name(links.get(), name))
      out.push_back("sysctl " + name + " " + sysctl_text(name));
  return out;
}

// What a reader wants to see of the calling thread's namespace: each rail with its state,
// addresses and ARP sysctls, the IPv4 routes (main table first, the local table left out) and the
// IPv4 rules other than the kernel's defaults.
std::vector<std::string> rail_view() {
  NlSocket sock;
  CachePtr links = sock.links();
  ObjList addrs = sock.addrs();
  std::vector<std::string> out;
  std::set<int> rails;
  for (const auto& name : rail_names()) {
    LinkPtr l = find_link(sock, name);
    if (!l) {
      out.push_back(name + ": not in this network namespace");
      continue;
    }
    const int ifindex = rtnl_link_get_ifindex(l.get());
    rails.insert(ifindex);
    std::string line = name + ": " + (link_is_up(l.get()) ? "up" : "down") + ", mtu " +
                       std::to_string(rtnl_link_get_mtu(l.get()));
    for (const auto& rec : capture_addrs(addrs, ifindex))
      line += ", " + rec["family"].get<std::string>() + " " + rec["local"].get<std::string>();
    out.push_back(line);
    out.push_back("  net.ipv4.conf." + name + ": " + sysctl_text(name));
  }
  std::vector<std::pair<unsigned, std::string>> routes;
  for (const auto& o : sock.routes()) {
    auto* r = reinterpret_cast<rtnl_route*>(o.get());
    const unsigned table = rtnl_route_get_table(r);
    if (rtnl_route_get_family(r) != AF_INET || table == RT_TABLE_LOCAL ||
        (rtnl_route_get_flags(r) & RTM_F_CLONED))
      continue;
    routes.emplace_back(table == RT_TABLE_MAIN ? 0 : table, route_text(r, links.get(), false));
  }
  std::stable_sort(routes.begin(), routes.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [table, text] : routes) out.push_back("route " + text);
  bool any_rule = false;
  for (const auto& o : sock.rules()) {
    auto* r = reinterpret_cast<rtnl_rule*>(o.get());
    if (rtnl_rule_get_family(r) != AF_INET || is_default_rule(r)) continue;
    out.push_back("rule " + rule_text(r, false));
    any_rule = true;
  }
  if (!any_rule) out.push_back("rules: only the kernel's defaults (local, main, default)");
  return out;
}

void print_lines(const std::vector<std::string>& lines) {
  for (const auto& l : lines) std::cout << "  " << l << "\n";
  std::cout << std::flush;
}

// Polls the host's full state until it equals `want` or kSettleMs pass; returns the last one.
std::vector<std::string> settle_to(const std::vector<std::string>& want) {
  std::vector<std::string> got;
  for (int waited = 0;; waited += 50) {
    got = full_state();
    if (got == want || waited >= kSettleMs) return got;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Waits (up to kSettleMs) until every rail reports operstate UP: a veth gets its carrier a moment
// after it is set up, and the state compared after restore must not depend on that moment.
void wait_rails_up() {
  for (int waited = 0; waited < kSettleMs; waited += 50) {
    NlSocket sock;
    bool all_up = true;
    for (const auto& name : rail_names()) {
      LinkPtr l = find_link(sock, name);
      all_up = all_up && l && rtnl_link_get_operstate(l.get()) == IF_OPER_UP;
    }
    if (all_up) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

bool host_has_rdma_nic() {
  std::error_code ec;
  return fs::exists("/sys/class/infiniband", ec) && !fs::is_empty("/sys/class/infiniband", ec);
}

// Runs in the forked child, which owns the "host" network namespace.
int host_side(const std::string& self, const fs::path& dir) {
  const bool has_nic = host_has_rdma_nic();
  if (::unshare(CLONE_NEWNET) != 0) throw_errno("unshare(CLONE_NEWNET)", errno);
  disable_ipv6_here();
  NlSocket sock;
  create_rails(sock);
  const fs::path sys = dir / "sys";
  build_sysfs(sys, sock);

  const Rail &r0 = kRails[0], &r1 = kRails[1];
  std::cout << (has_nic ? "The demo never moves this host's RDMA NICs"
                        : "This host has no RDMA NIC")
            << ", so the rails are stand-ins, in network namespaces this demo\n"
               "creates (unnamed: they vanish with their processes; this machine's own network is "
               "never touched):\n"
            << "  - a fresh namespace plays the host: a veth pair " << r0.netdev << " <-> "
            << r1.netdev << " stands in for two rails\n    (" << r0.addr << ", " << r1.addr
            << ", MTU " << kMtu << ", route " << kRouteDst << " via " << kRouteGateway << ");\n"
            << "  - the sysfs that `select` reads is CONSTRUCTED in the kernel's layout: it names "
            << r0.netdev << " and\n    " << r1.netdev << " the RoCE netdevs of rxe-like devices "
            << r0.ibdev << " and " << r1.ibdev
            << " (GID tables from their real MACs\n    and addresses), under " << sys.string()
            << ".\nHost namespace before:\n";
  wait_rails_up();
  print_lines(rail_view());
  const std::vector<std::string> before = full_state();

  int rc = run_shown({self, "netns", "select", "--sysfs-root", sys.string()}, kCommand);
  if (rc != 0) {
    std::cout << "select exited " << rc << "\n";
    return 1;
  }

  Container container;
  const std::string pid = std::to_string(container.pid());
  std::cout << "The container: pid " << pid << ", asleep in a network namespace of its own.\n";
  const std::string journal = (dir / "journal.json").string();
  rc = run_shown({self, "netns", "move", "--pid", pid, "--ifaces", join_list(rail_names(), ","),
                  "--arp-profile", kProfile, "--journal", journal},
                 kCommand);
  if (rc != 0) {
    std::cout << "move exited " << rc << "\n";
    return 1;
  }
  const NetnsFd target = NetnsFd::open_pid(container.pid());
  std::cout << "Inside the container (ARP sysctls, tables 1000+ and their rules: profile "
            << kProfile << "):\n";
  print_lines(target.run_inside([] { return rail_view(); }));
  std::cout << "Host namespace now:\n";
  print_lines(rail_view());

  rc = run_shown({self, "netns", "restore", "--journal", journal}, kCommand);
  if (rc != 0) {
    std::cout << "restore exited " << rc << "\n";
    return 1;
  }
  const std::vector<std::string> after = settle_to(before);
  std::cout << "Host namespace after restore:\n";
  print_lines(rail_view());
  if (after == before) {
    std::cout << "Host state identical to before the move: " << before.size()
              << " lines compared (links with MAC, MTU, flags and operstate;\n"
                 "addresses; routes of every table; rules; ARP sysctls of the rails). restore "
                 "renamed the\njournal to "
              << journal << ".done.\n";
    return 0;
  }
  std::cout << "Host state DIFFERS from before the move (- before, + after):\n";
  std::set<std::string> b(before.begin(), before.end()), a(after.begin(), after.end());
  for (const auto& l : before)
    if (!a.count(l)) std::cout << "  - " << l << "\n";
  for (const auto& l : after)
    if (!b.count(l)) std::cout << "  + " << l << "\n";
  if (a == b) std::cout << "  (the same lines in another order)\n";
  return 1;
}

}  // namespace

int rail_launcher(const std::string& self) {
  char tmpl[] = "/tmp/gdrproxy-demo-netns-XXXXXX";
  if (!::mkdtemp(tmpl)) {
    std::cout << "rail launcher demo: cannot create a directory under /tmp: "
              << std::strerror(errno) << "\n";
    return 1;
  }
  const fs::path dir = tmpl;
  std::cout.flush();
  std::fflush(stdout);
  pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 1;
    ::alarm(kWholeLimitS);
    try {
      rc = host_side(self, dir);
    } catch (const std::exception& e) {
      std::cout << "rail launcher demo: " << e.what() << "\n";
    }
    std::cout.flush();
    std::fflush(stdout);
    ::_exit(rc);
  }
  const int fork_errno = errno;
  int st = 0;
  if (pid > 0)
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (pid < 0) {
    std::cout << "rail launcher demo: fork: " << std::strerror(fork_errno) << "\n";
    return 1;
  }
  if (WIFSIGNALED(st)) {
    std::cout << "rail launcher demo: stopped by signal " << WTERMSIG(st)
              << (WTERMSIG(st) == SIGALRM
                      ? " (over its " + std::to_string(kWholeLimitS) + " s limit)"
                      : std::string())
              << "; its namespaces and veth pair went with it\n";
    return 1;
  }
  return WEXITSTATUS(st);
}

}  // namespace gdrproxy::demo
