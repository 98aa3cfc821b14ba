// The journal's vocabulary: an interface's addresses, routes and policy rules as JSON records,
// how to read them from a namespace, and how to write them back into one.
//
// The idea not to miss: records name interfaces, never ifindexes. Restore gives a rail its name
// back before anything is written (finding it by its identity, link_identity.h), so every write
// resolves names in the namespace it writes to. Writes are "ensure present": an entry that already
// exists (EEXIST) counts as done, which is what makes restore idempotent and safe after a crash at
// any step. (`move` writes routes strictly instead: in the target an existing route of the same key
// is someone else's.)
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "netns/nl.h"

namespace gdrproxy::netns {

using Json = nlohmann::json;

// Addresses of `ifindex` in dump order (the kernel lists them in insertion order, so writing
// them back in this order reproduces the same list).
Json capture_addrs(const ObjList& addrs, int ifindex);
// Routes of every table whose nexthop uses `ifindex`, except those the kernel makes by itself
// (protocol "kernel": connected, local and broadcast routes come back with the addresses).
Json capture_routes(const ObjList& routes, nl_cache* links, int ifindex);
// Policy rules that use the interface: iif/oif is `ifname`, or the selector is exactly one of its
// addresses (a per-address source rule).
Json capture_rules(const ObjList& rules, const std::string& ifname, const Json& addrs);

// The interfaces among `names` in the order their kernel-made IPv4 routes appear in `routes`.
// Among routes of equal key (one subnet on several rails) the kernel keeps insertion order and
// the first one carries traffic that is not bound to a source address, so restore must bring
// this order back too.
Json kernel_route_order(const ObjList& routes, nl_cache* links, const std::set<std::string>& names);

// Ensure-present writes through `sock`. `ifname` is resolved with `links` of that namespace.
// Each throws gdrproxy::Error naming the interface and the record on any error other than EEXIST;
// add_addr's carries EACCES when the kernel refuses an IPv6 address because IPv6 is disabled on
// the interface there (disable_ipv6: the only reason ipv6_add_addr gives EACCES).
void add_addr(const NlSocket& sock, int ifindex, const std::string& ifname, const Json& rec);
// With exist_ok false, a route with the same key (table, prefix, tos, metric) that already
// exists is an error: `move` must not mistake someone else's route in the target for its own.
void add_route(const NlSocket& sock, nl_cache* links, const Json& rec, bool exist_ok);
void add_rule(const NlSocket& sock, const Json& rec);
// Removes an address if present (ENOENT/EADDRNOTAVAIL is fine).
void delete_addr(const NlSocket& sock, int ifindex, const std::string& ifname, const Json& rec);
// Removes a rule if present (ENOENT is fine).
void delete_rule(const NlSocket& sock, const Json& rec);

// One-line human form of a record for messages.
std::string describe(const Json& rec);

}  // namespace gdrproxy::netns
