// Who holds a node's rails, read from <state>/run: one owner file per holder ("<pid> <start
// time>", base/owner_file.h): run/owner for a run with one container per node,
// run/owners/<key> for each rank's run (rank-N) and each attached Slurm step (step-J.S). The idea
// not to miss: a holder counts only while its process is alive by pid AND start time and is not
// a zombie, so a reused pid or a killed step that was not reaped yet holds nothing; and the
// node's run lock (<state>/run.lock, flock) is held while anything the holders share is set up
// or given back.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/owner_file.h"
#include "base/unique_fd.h"
#include "harness/identity.h"

namespace gdrproxy::harness {

// "node" (the run with one container per node) or a key: letters, digits, '.', '_', '-'.
bool valid_key(const std::string& key);

// The owner file of `key` ("node": run/owner; else run/owners/KEY).
std::string owner_file_of(const StatePaths& p, const std::string& key);

// "rank 1" for "rank-1", "step 1.0" for "step-1.0": the key as a line names it.
std::string key_words(const std::string& key);

struct Owner {
  std::string key;   // "node", or the file name under run/owners
  std::string file;  // its path
  OwnerRecord record;
  bool alive = false;
};

// Every owner file of the node, in order: run/owner, then run/owners/* by name. A file that is
// not an owner record is listed with pid 0, never alive.
std::vector<Owner> owners(const StatePaths& p);
// The pids of the live ones.
std::vector<pid_t> alive_owner_pids(const StatePaths& p);

// The node's run lock (flock on <state>/run.lock, which `run` in bash takes too), waited for at
// most 120 s; Failure(125) naming the lock when it is not got. Released by release() or when
// destroyed. One per process: a second flock of the same file would wait for the first.
class RunLock {
 public:
  explicit RunLock(const Identity& id) : id_(id) {}
  void acquire(int seconds = 120);
  void release() { fd_.reset(); }
  bool held() const { return static_cast<bool>(fd_); }

 private:
  const Identity& id_;
  UniqueFd fd_;
};

// Whether `path` is a mount point (a pinned namespace is a bind mount).
bool is_mount_point(const std::string& path);

}  // namespace gdrproxy::harness
