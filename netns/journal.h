// The journal: everything `move` is about to change, written and fsynced before the first change,
// and the only input of `restore`.
//
// The idea not to miss: restore never trusts the journal to say how far `move` got. It records
// the *original* state only and restore compares it with what it finds, so a crash at any step
// (or a dead target namespace) needs no progress bookkeeping. The journal is bound to the host,
// the boot and the network namespace it was written in, and carries a checksum, so a journal from
// elsewhere or a damaged one is refused before anything is touched.
//
// Format 2 records each interface's identity (link_identity.h), by which restore finds it.
// Format 1 journals recorded only names and MACs, which a tenant can copy onto a link of its
// own: restore refuses them whole rather than match by those (the interfaces are then given back
// by hand), since what a format 1 journal knows cannot tell a rail from an impostor.
#pragma once

#include <string>

#include "netns/records.h"

namespace gdrproxy::netns {

inline constexpr const char* kJournalFormat = "gdrproxy-netns-journal/2";
inline constexpr const char* kJournalFormatWithoutIdentity = "gdrproxy-netns-journal/1";

// hostname, machine-id and boot-id of this machine, as the journal stores them.
Json host_identity();

// FNV-1a 64 of the document without its "checksum" member, as 16 hex digits.
std::string journal_checksum(const Json& doc);

// Adds the checksum, writes `path` through a temporary file, fsyncs it and its directory, then
// renames it into place: after a crash the journal is either absent or complete.
void write_journal(const std::string& path, Json doc);

// Reads and validates: format, checksum, host and boot. Throws gdrproxy::Error naming `path`
// (a format 1 journal included, saying why).
Json load_journal(const std::string& path);

// Where a completed restore moves the journal (kept so a second restore is a no-op re-check).
std::string done_path(const std::string& journal_path);

}  // namespace gdrproxy::netns
