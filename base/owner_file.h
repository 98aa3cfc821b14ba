// Who holds something, named so that a reused pid does not pass for it: an owner file holds
// "<pid> <start time>\n", the start time being field 22 of /proc/<pid>/stat (clock ticks after
// boot). The idea not to miss: a process is the owner only while both match AND it is not a
// zombie (state Z) or dead (X): a zombie never runs again and has left its namespaces, though it
// keeps its pid and start time until its parent reaps it. The rail hooks (proxy/oci/) and the
// multi-node harness (harness/) decide liveness here, and only here.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace gdrproxy {

struct OwnerRecord {
  pid_t pid = 0;
  std::string start;  // field 22 of /proc/<pid>/stat when the record was made
};

// The start time of process `pid` while it is alive; "" when there is no such process, or it is
// a zombie or dead (state Z or X).
std::string process_start_time(pid_t pid);

// The record of `pid` as it is now; nothing when it is not alive (see process_start_time).
std::optional<OwnerRecord> owner_record_of(pid_t pid);

// Whether the process `r` names is alive: same pid, same start time, not a zombie.
bool owner_alive(const OwnerRecord& r);

// Whether the process `r` names is still there, alive or a zombie not yet reaped (what a caller
// that must see it gone waits for).
bool owner_present(const OwnerRecord& r);

// Reads an owner file; nothing when it is absent or not "<pid> <start>" with a positive pid.
std::optional<OwnerRecord> read_owner_file(const std::string& path);

// Whether the owner file at `path` names a live process.
bool owner_file_alive(const std::string& path);

// Writes `r` to `path` whole (a temporary file renamed into place). Throws gdrproxy::Error
// naming `path` when it cannot.
void write_owner_file(const std::string& path, const OwnerRecord& r);

}  // namespace gdrproxy
