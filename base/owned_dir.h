// Small records kept in a directory only this process's user may write (/run/gdrproxy's
// runtime feature answers, the agent's start count). The idea not to miss: the directory is
// checked once and every entry is opened relative to that descriptor, without following a link,
// so the directory checked is the one read and written; an entry is believed only when it is a
// regular file of ours, and it is replaced whole (a temporary file renamed over it), never
// written in place.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "base/unique_fd.h"

namespace gdrproxy {

// `dir`, opened without following a link, when it is a directory owned by the effective uid that
// neither group nor others may write; empty otherwise.
UniqueFd open_owned_dir(const std::string& dir);

// Entry `name` of the directory `dfd`: its first `max` bytes when it is a regular file owned by
// the effective uid (not a link); nullopt otherwise.
std::optional<std::string> read_owned_entry(int dfd, const std::string& name, size_t max);

// Replaces entry `name` of `dfd` with `content` (mode 0600): written to a temporary file of this
// pid, then renamed over it. False, and nothing left behind, when any step fails.
bool replace_owned_entry(int dfd, const std::string& name, std::string_view content);

}  // namespace gdrproxy
