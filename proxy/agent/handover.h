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

// The pid (in our pid namespace) of the process behind `pidfd`, from /proc/self/fdinfo; <= 0 when
// it is gone (kernels before 5.13 may still show its number: verified_facts then finds it dead).
pid_t pid_of_pidfd(int pidfd);

}  // namespace gdrproxy::proxy
