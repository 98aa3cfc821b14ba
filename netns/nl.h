// RAII over libnl-3 / libnl-route-3: an owned rtnetlink socket and owning pointers for libnl
// objects and caches, plus the few conversions (address <-> text, error -> message) every other
// file needs.
//
// The idea not to miss: an NlSocket talks to the network namespace it was *created* in, for its
// whole life (see netns_fd.h); open_in() creates one inside another namespace.
#pragma once

#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>

#include <memory>
#include <string>
#include <vector>

#include "netns/netns_fd.h"

namespace gdrproxy::netns {

template <typename T, void (*Free)(T*)>
struct NlDeleter {
  void operator()(T* p) const {
    if (p) Free(p);
  }
};
template <typename T, void (*Free)(T*)>
using NlPtr = std::unique_ptr<T, NlDeleter<T, Free>>;

using NlAddrPtr = NlPtr<nl_addr, nl_addr_put>;
using LinkPtr = NlPtr<rtnl_link, rtnl_link_put>;
using AddrPtr = NlPtr<rtnl_addr, rtnl_addr_put>;
using RoutePtr = NlPtr<rtnl_route, rtnl_route_put>;
using RulePtr = NlPtr<rtnl_rule, rtnl_rule_put>;
using CachePtr = NlPtr<nl_cache, nl_cache_free>;
using ObjPtr = NlPtr<nl_object, nl_object_put>;
using ObjList = std::vector<ObjPtr>;

class NlSocket {
 public:
  // A connected NETLINK_ROUTE socket in the calling thread's network namespace.
  NlSocket();
  // A connected NETLINK_ROUTE socket inside `ns`.
  static NlSocket open_in(const NetnsFd& ns);

  nl_sock* get() const { return sock_.get(); }

  CachePtr links() const;
  // Addresses, routes (every table) and rules of both families, one object per kernel message in
  // dump order. Not a libnl cache on purpose: a cache keeps one object per key, and routes to
  // one prefix through several rails (or rules of equal priority) share a key.
  ObjList addrs() const;
  ObjList routes() const;
  ObjList rules() const;

 private:
  ObjList dump(int rtm_type, const char* what) const;
  NlPtr<nl_sock, nl_socket_free> sock_;
};

// libnl error code -> "<what>: <libnl message>" gdrproxy::Error.
[[noreturn]] void throw_nl(const std::string& what, int nl_error);

// How many times a dump the kernel marks interrupted (NLM_F_DUMP_INTR: the namespace changed
// while it was read) is read in all before its error is reported: rails of other containers may
// move at any moment.
inline constexpr int kDumpAttempts = 20;

// "192.0.2.1/24", "fe80::1/64", "" for null. Prefix always written so parse_addr round-trips.
std::string addr_to_string(const nl_addr* addr);
// Parses addr_to_string's output for `family` (AF_INET/AF_INET6). Throws naming the text.
NlAddrPtr parse_addr(const std::string& text, int family);

// Name <-> ifindex through a link cache.
int ifindex_by_name(nl_cache* links, const std::string& name);  // 0 when absent
std::string name_by_ifindex(nl_cache* links, int ifindex);      // "" when absent

// MAC of a link as "aa:bb:..." ("" when it has none).
std::string link_mac(rtnl_link* link);

}  // namespace gdrproxy::netns
