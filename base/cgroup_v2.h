// A cgroup v2 as the kernel names it to BPF programs: its id (the cgroup directory's inode
// number, what bpf_get_current_ancestor_cgroup_id returns) and its depth. The idea not to miss:
// /proc/<pid>/cgroup gives a path relative to the reader's cgroup namespace root, so it is
// looked up under this process's own cgroup2 mount, and a reader in a cgroup namespace of its
// own (not the host's) cannot name a cgroup by id this way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/unique_fd.h"

namespace gdrproxy {

struct CgroupV2 {
  uint64_t id = 0;
  unsigned level = 0;  // 0: the hierarchy's root
};

// The cgroup v2 at `path` ("/system.slice/x.scope", as cgroup_of() gives it) on this process's
// cgroup2 mount; nullopt and why (one line) when there is no such mount or no such cgroup.
std::optional<CgroupV2> cgroup_v2(const std::string& path, std::string& why);

// Whether cgroup path `path` is `root` itself or lies below it (as cgroup_of() gives both).
bool cgroup_at_or_below(const std::string& path, const std::string& root);

// This process's cgroup2 mount, opened (invalid when there is none), for cgroup_v2_exists.
UniqueFd cgroup2_root();

// Whether the cgroup v2 with this id exists (opened by its id as a file handle on the cgroup2
// mount `root`; needs CAP_DAC_READ_SEARCH). True when it cannot be told (no root, another
// error): callers forget what belonged to a cgroup only once it is known gone.
bool cgroup_v2_exists(int root, uint64_t id);

}  // namespace gdrproxy
