// Who made a call: host tid/tgid, the tid as its pid namespace sees it, and that namespace's id.
// Per-process state in the supervisor is keyed by (pidns, ns pid), so two containers whose
// processes share a pid are never mixed.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <utility>

#include "proxy/trace/trace_record.h"

namespace gdrproxy::proxy {

// Reads /proc/<tid>/status and /proc/<tid>/ns/pid. Fields stay 0/empty when unreadable (the
// process may be gone).
ProcessIdentity read_process_identity(pid_t host_tid);

using ProcessKey = std::pair<uint64_t, uint32_t>;  // (pidns inode, ns tgid)

}  // namespace gdrproxy::proxy
