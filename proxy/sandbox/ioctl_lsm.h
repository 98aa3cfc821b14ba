// Device-ioctl judgement in the kernel by a BPF LSM program (gdrproxy run --lsm, gdrproxy agent
// --lsm; the program is ioctl_lsm.bpf.c). The idea not to miss: the seccomp filter sees only a
// request number, so the requests it lets run untrapped (kernel_allow.h) would run on every fd;
// with this program loaded they run only on the granted nodes the policy allows them on, and no
// ioctl at all runs on a node of a guarded driver the sandbox was not granted. That is what lets a
// sandbox granted some GPUs, not all, skip the trap for the calls the policy allows whatever their
// parameters. Content-dependent calls still trap: the program never reads the caller's memory. Each
// refusal is reported after the fact (take_refusals), for the supervisor to say whose call on which
// node. One loaded program judges any number of sandboxes, each a "scope" with tables of its own:
// `run` marks its sandbox's first task, the agent judges each container's cgroup v2. Mechanism
// only: which (node, request) pairs are allowed comes from the policy through
// kernel_allowed_ioctls() and the grants.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/cgroup_v2.h"
#include "base/unique_fd.h"
#include "proxy/devices/device_catalog.h"
#include "proxy/sandbox/kernel_allow.h"

struct bpf_object;
struct bpf_link;
struct ring_buffer;

namespace gdrproxy::proxy {

// gdrproxy run --lsm: off; on (refuse to start where the kernel cannot run the judge); auto (use
// it where it can).
enum class LsmChoice { kOff, kOn, kAuto };

// What the program decides from, in the kernel's terms.
struct IoctlLsmTables {
  std::vector<std::pair<dev_t, bool>> nodes;        // a guarded node, and whether it is granted
  std::vector<unsigned> guarded_majors;             // drivers whose unknown minors are refused
  std::vector<uint32_t> untrapped;                  // requests the filter lets run untrapped
  std::vector<std::pair<dev_t, uint32_t>> allowed;  // (granted node, untrapped request)
};

// The tables for a sandbox with these grants and this untrapped set (computed with
// KernelAllowFacts::judged_per_device).
IoctlLsmTables ioctl_lsm_tables(const DeviceCatalog& catalog, const Grants& grants,
                                const KernelAllowed& untrapped);

// Whether this kernel runs BPF LSM programs at all; else false and why, in one line.
bool bpf_lsm_active(std::string& why);

class IoctlLsm {
 public:
  // Loads and attaches the program, judging no task yet; nullptr and why (one line) when this
  // kernel or these privileges cannot.
  static std::unique_ptr<IoctlLsm> load(std::string& why);
  // The same, pinned in `pin_dir` (on a bpffs), so that the judge outlives this process: the
  // program stays attached and its tables stay after an exit or a kill, for the next process to
  // take with the same call (the same program: `pin_dir`/<version of the program>). The scopes
  // an earlier process left are then inherited: still judged, until a scope of this process
  // judges their cgroup or sweep_inherited() finds it gone.
  static std::unique_ptr<IoctlLsm> load_pinned(const std::string& pin_dir, std::string& why);
  ~IoctlLsm();
  IoctlLsm(const IoctlLsm&) = delete;
  IoctlLsm& operator=(const IoctlLsm&) = delete;

  // The deepest cgroup level the program looks at: a cgroup below it cannot be judged.
  static constexpr unsigned kMaxCgroupLevel = 31;

  // Gives `scope` (not 0, not in use) its tables, before any task is judged in it. Throws
  // gdrproxy::Error when they do not fit (the scope is then left without tables).
  void add_scope(uint32_t scope, const IoctlLsmTables& tables);
  // Judges `pid` (a task not yet running the command) and every task it creates from now on in
  // `scope`. Throws gdrproxy::Error when it cannot be marked.
  void judge_task(pid_t pid, uint32_t scope);
  // Judges every task in `cgroup` or below it, now and later, in `scope`. A cgroup scope
  // `replacing` of this process judges moves to `scope` in one update (its tables stay, for
  // forget_scope). Throws gdrproxy::Error when it cannot (another scope judges that cgroup; too
  // deep; the map full).
  void judge_cgroup(const CgroupV2& cgroup, uint32_t scope, uint32_t replacing = 0);
  // Ends `scope` (never throws: owners call it from destructors): its cgroups are no longer
  // judged, its tables go. (A task still marked in it finds no grant: every ioctl of it on a
  // guarded node is refused.)
  void forget_scope(uint32_t scope) noexcept;

  // Pinned: where (empty when not), whether it was taken from an earlier process's pins, how
  // many cgroups of earlier processes it still judges, and the highest scope number they use
  // (new scopes must be above it).
  const std::string& pinned_at() const { return pinned_at_; }
  bool inherited() const { return inherited_from_pins_; }
  size_t inherited_cgroups() const;
  uint32_t highest_inherited_scope() const;
  // Forgets the inherited cgroups that no longer exist, and the tables of scopes left with
  // none; returns how many cgroups went.
  size_t sweep_inherited();
  // Removes the pins: the judge then ends with this process.
  void unpin();
  // Judges of other builds pinned beside this one (`pin_dir`/<another version>: an upgrade
  // leaves the older build's judge pinned, still judging the containers it judged while they
  // run). Each whose judged cgroups are all gone (or that has no such map: pins cut short) is
  // unpinned now, and its program detaches; the others are left. Returns each one found, with the
  // cgroups it still judges (0: removed now).
  struct OtherJudge {
    std::string dir;
    size_t cgroups = 0;
  };
  std::vector<OtherJudge> retire_other_judges();

  struct Counts {
    uint64_t allowed = 0;     // untrapped requests the program let through
    uint64_t refused = 0;     // ioctls it refused (EPERM)
    uint64_t unreported = 0;  // refusals the full ring could not take (counted, not said)
  };
  Counts counts() const;

  // One refused ioctl, as the program saw it.
  struct Refusal {
    enum class Why { kUngranted, kUnknownMinor, kNotAllowedHere };
    pid_t tid = 0, tgid = 0;  // in this process's pid namespace; 0 when not visible here
    pid_t ns_tid = 0;         // in the caller's own pid namespace
    dev_t rdev = 0;
    uint32_t request = 0;
    Why why = Why::kUngranted;
    uint32_t scope = 0;  // the scope the caller was judged in
    std::string comm;    // the caller's, raw (the tenant's bytes: escape before printing)
  };
  // Readable (poll) when refusals wait to be taken.
  int refusals_fd() const;
  // Calls `each` for every refusal reported since the last call, oldest first.
  void take_refusals(const std::function<void(const Refusal&)>& each);

 private:
  IoctlLsm() = default;
  // What a scope put in the shared maps, so that forget_scope removes exactly that.
  struct Scope {
    std::vector<uint32_t> granted, untrapped;
    std::vector<std::pair<uint32_t, uint32_t>> allowed;  // (node, request), the kernel's dev_t
    std::vector<CgroupV2> cgroups;
  };
  void erase_tables(uint32_t scope, const Scope& s);
  void erase_inherited_scope(uint32_t scope);
  bool publish_levels();  // false: the map refused the update (errno)
  bool find_maps(std::string& why);
  bool load_object(std::string& why);  // the embedded program, loaded into obj_, and its maps
  bpf_object* obj_ = nullptr;
  std::vector<UniqueFd> pinned_maps_;  // the maps, opened from their pins (taken over)
  std::string pinned_at_;
  bool inherited_from_pins_ = false;
  std::map<uint32_t, std::vector<CgroupV2>> inherited_;  // earlier processes' scopes
  std::vector<bpf_link*> links_;
  int sandboxed_fd_ = -1, counters_fd_ = -1, cgroups_fd_ = -1, levels_fd_ = -1;
  int guarded_nodes_fd_ = -1, guarded_majors_fd_ = -1, granted_fd_ = -1, untrapped_fd_ = -1,
      allowed_fd_ = -1;
  std::map<uint32_t, Scope> scopes_;
  std::array<unsigned, kMaxCgroupLevel + 1> cgroups_at_level_{};
  ring_buffer* ring_ = nullptr;
  std::vector<Refusal> taken_;  // filled by the ring's callback while take_refusals consumes
};

}  // namespace gdrproxy::proxy
