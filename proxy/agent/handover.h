// One process's handover, from a runtime or from the fd store, until a session takes it. The idea
// not to miss: the process is known by its pidfd, opened on receipt (or kept by the fd store since
// then), never by its pid looked up again; what the agent believes of it (pid namespace, cgroup)
// is read through /proc and confirmed through that pidfd afterwards, so a reused pid cannot lend
// a stranger's facts.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "base/unique_fd.h"
#include "proxy/agent/fd_store.h"
#include "proxy/engine/received_ids.h"
#include "proxy/oci/container_state.h"

namespace gdrproxy::proxy {

struct Handover {
  UniqueFd listener;
  UniqueFd pidfd;
  ReceivedIdPage ids;
  uint64_t key = 0;                  // its fd-store entry (0: none, or an older holder's)
  bool in_holder = false;            // the fd store keeps it already
  bool from_previous_agent = false;  // re-attached from the fd store
  // What the agent verified of the process through its pidfd.
  ino_t pidns = 0;
  std::string cgroup;
};

// How the agent's lines name a handed-over process: "container ID: process PID".
std::string process_name(const ContainerProcessState& st);

// The pid namespace and cgroup of the process behind `pidfd` (whose pid is `pid`), read through
// /proc and confirmed afterwards: the pidfd still signals as alive, so the reads were of that
// process and not of a reused pid. False when it is gone.
bool verified_facts(int pidfd, pid_t pid, ino_t& pidns, std::string& cgroup);

// A listener refused: closed here, and its fd-store entry (this handover's, or the one it came
// from) forgotten in `store` (may be null), so that its process's trapped calls fail rather than
// wait.
void let_go(Handover& h, const std::string& id, FdStoreClient* store);

// The first step of an adoption: `h` holds the pidfd the process was found by (from a runtime:
// opened by its pid on receipt; from the fd store: the one the adopting agent verified, never its
// pid looked up again, since the process may have exited while no agent ran and its pid be
// another's now); it must be that process, alive, with a seccomp listener (anything else would
// make a session that waits on it for ever). Fills in what was verified of it; false and `why`
// (to follow the process's name) when refused. A process its runtime did not name (pid 0) is
// checked at its first call instead (check_first_caller).
bool checked_process(const ContainerProcessState& st, Handover& h, std::string& why);

// The first caller of a listener whose runtime named no process (crun's exec): pid `pid`, its
// call `call` pending on `listener`. Pinned by a pidfd opened while that call is still pending (so
// the pidfd is the caller's, not a reused pid's), it must be in pid namespace `pidns` and in
// cgroup `cgroup` or below it, container `id`'s. Returns "" and fills `pidfd`, or why not; a
// caller refused is killed when `kill` (its container is judged in the kernel by that cgroup).
std::string check_first_caller(pid_t pid, int listener, uint64_t call, const std::string& id,
                               ino_t pidns, const std::string& cgroup, bool kill, UniqueFd& pidfd);

}  // namespace gdrproxy::proxy
