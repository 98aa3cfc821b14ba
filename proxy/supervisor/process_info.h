// Who made a call: host tid/tgid, the tid as its pid namespace sees it, and that namespace's id.
// The supervisor keys its state by host tid (unique in its own pid namespace, validated against
// pid reuse); traces carry (pidns, ns pid), so two containers whose processes share a pid are
// never mixed.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "proxy/trace/trace_record.h"

namespace gdrproxy::proxy {

// Reads /proc/<tid>/status and /proc/<tid>/ns/pid. Fields stay 0/empty when unreadable (the
// process may be gone).
ProcessIdentity read_process_identity(pid_t host_tid);

}  // namespace gdrproxy::proxy
