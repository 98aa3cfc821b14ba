// Writing an interface's journaled configuration into the namespace it is now in: shared by
// `move` (into the target) and `restore` (back on the host). Each stage ends with a fault point.
#pragma once

#include <ostream>
#include <string>

#include "netns/profile.h"
#include "netns/records.h"

namespace gdrproxy::netns {

// MTU, addresses (in journal order) and up state of `iface` (a journal interface record). An IPv6
// address is left out, with a note on `log`, where IPv6 is disabled on the interface in this
// namespace (Docker disables it in a container's namespace unless its network has IPv6): that is
// the namespace owner's choice, and the journal keeps the address for the way back.
void configure_link(const NlSocket& sock, const Json& iface, std::ostream& log);
// Routes in journal order. A route whose gateway is reachable only through another journaled
// route is retried after the others (a few passes, bounded).
// `exist_ok` as in add_route: true for restore, false for move.
void configure_routes(const NlSocket& sock, const Json& routes, const std::string& ifname,
                      bool exist_ok);
void configure_rules(const NlSocket& sock, const Json& rules, const std::string& ifname);
// Writes net.ipv4.conf.<ifname>.* inside `ns`.
void configure_sysctls(const NetnsFd& ns, const std::string& ifname, const Json& values);

// The per-rail routing table and rule the profile asks for: for every IPv4 address A/len of
// rail number `rail_index`, the subnet route and "from A lookup <table>", plus copies of the
// rail's main-table gateway routes. Empty arrays when the profile has no source routing.
Json source_routing_routes(const Json& iface, const ArpProfile& profile, unsigned rail_index);
Json source_routing_rules(const Json& iface, const ArpProfile& profile, unsigned rail_index);

}  // namespace gdrproxy::netns
