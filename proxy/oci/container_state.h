// The container process state an OCI runtime sends with a container's seccomp listener fd
// (runtime-spec config-linux.md, "The Container Process State"), parsed and checked. Whoever can
// connect to the listener socket writes these bytes: every field is checked for type and range
// here, before anything uses it, and `why` carries the sender's bytes only escaped. The listener
// is the fd whose name in `fds` is "seccompFd": found by that name, never by position.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gdrproxy::proxy {

// The name runtimes give the seccomp listener in `fds`.
inline constexpr std::string_view kSeccompFdName = "seccompFd";
// The longest container id accepted (runc and crun ids are far shorter; the bound keeps a
// hostile id out of every map and log line the agent keeps).
inline constexpr size_t kMaxContainerIdBytes = 1024;

// runtime-spec runtime.md "Lifecycle": runc sends kCreating for a container's init process and
// kRunning for each `runc exec` process; crun sends kCreating.
enum class ContainerStatus { kCreating, kCreated, kRunning, kStopped };

const char* container_status_name(ContainerStatus status);

struct ContainerProcessState {
  // The runtime's spec version ("1.2.0" from runc, "0.2.0" hard-coded by crun): kept, never
  // checked.
  std::string oci_version;
  // Names of the fds that came with the message, in SCM_RIGHTS order.
  std::vector<std::string> fd_names;
  // Position of the seccomp listener among the received fds (< fds_received).
  size_t seccomp_fd_index = 0;
  // The process the listener belongs to, as the runtime's pid namespace sees it; 0 when the
  // runtime does not say (crun 1.8's `exec`): the agent binds such a listener to its first caller.
  pid_t pid = 0;
  // linux.seccomp.listenerMetadata; empty when absent.
  std::string metadata;

  // runtime-spec runtime.md "State" of the container the process belongs to.
  struct RuntimeState {
    std::string oci_version;
    std::string id;  // non-empty, at most kMaxContainerIdBytes, any bytes: escape to print
    ContainerStatus status = ContainerStatus::kCreating;
    pid_t pid = 0;       // the container's init process; 0 when absent (optional while creating)
    std::string bundle;  // absolute path; empty when absent
    std::map<std::string, std::string> annotations;
  } state;
};

// Parses and checks one container process state. `fds_received` is how many fds arrived with it:
// `fds` must name exactly that many, "seccompFd" among them exactly once. Keys this parser does
// not know are ignored (later spec versions add some). On failure returns nullopt and sets `why`
// to one printable line naming the field and what was expected ("state.id: expected ..."). Never
// throws.
std::optional<ContainerProcessState> parse_container_process_state(std::string_view json,
                                                                   size_t fds_received,
                                                                   std::string& why);

// Parses and checks the runtime's state of a container alone (what OCI hooks get on stdin), with
// the same checks and messages as the `state` member above. Never throws.
std::optional<ContainerProcessState::RuntimeState> parse_runtime_state(std::string_view json,
                                                                       std::string& why);

// A file name for a container id (trace files, hook state directories), one per id: the id
// itself where it is plain (letters, digits, '.', '_', '-', not starting with '.', at most 128
// bytes, as runtimes' ids are), else '%', the id's SHA-1 and its plain characters (up to 64).
// A plain id never holds '%', so no id can be given another's name, and two ids that are not
// plain share one only through a SHA-1 second preimage (a 64-bit hash of the id here once let a
// container be named after another's hashed name, and the hash itself could be collided).
// Never "", ".", ".." or anything with a '/'; at most 170 bytes.
std::string container_file_name(const std::string& id);

}  // namespace gdrproxy::proxy
