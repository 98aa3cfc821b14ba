// `gdrproxy netns restore`: bring every journaled interface back to the namespace it came from
// and re-apply its original configuration.
//
// The idea not to miss: restore works from the journal and the live state only. It looks for
// each interface by its journaled identity (link_identity.h), never by name or MAC, which a
// tenant can copy: on the host, then in the target if that still exists and is still the same
// namespace. A link there that holds the rail's name but is not the rail is refused, one line,
// counted as a problem and not touched; the rail itself, found by its identity, is brought back
// and renamed (the kernel renames an interface it takes back from a dying namespace when the name
// is taken). Everything is re-applied with ensure-present writes (a journaled soft-RoCE device
// is made again on its rail unless it is there already). RDMA devices that went with a rail in
// exclusive RDMA netns mode are brought back first, by their kernel index (rdma_netns.h).
// Running it twice, or after a crash of `move` at any step, gives the same result.
#pragma once

#include <ostream>
#include <string>

#include "netns/records.h"

namespace gdrproxy::netns {

// Restores what `doc` (a validated journal) describes. Returns how many interfaces could not be
// restored plus how many impostors were refused (each is reported on `log` by name); 0 means the
// host is as the journal says.
int restore_from_journal(const Json& doc, std::ostream& log);

// Loads the journal at `path` (or, if a previous restore completed, `path`.done), restores, and
// on full success renames the journal to `path`.done. Returns the number of problems.
int restore_command(const std::string& path, std::ostream& log);

}  // namespace gdrproxy::netns
