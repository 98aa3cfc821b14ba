// One agent per fd store. The idea not to miss: the lock is a POSIX record lock on a byte of
// PATH.lock, which is the process's own (never inherited by the holder or any child) and goes
// with it however it ends, kill -9 included. An agent killed a moment ago may still be exiting:
// its lock is waited for, up to a second. One killed that cannot finish exiting (a thread
// blocked in the kernel) keeps its lock while it serves nothing: the next agent steps over it to
// the next byte. The agent of a store is the one with the first byte whose every earlier byte is
// such a killed agent's.
#pragma once

#include <string>

#include "base/unique_fd.h"

namespace gdrproxy::proxy {

// Takes the store at `path` for this agent: the returned fd holds the lock while it is open.
// Throws gdrproxy::Error naming the other agent's pid when a live one has the store.
UniqueFd lock_fd_store(const std::string& path);

}  // namespace gdrproxy::proxy
