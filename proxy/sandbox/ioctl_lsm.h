// Device-ioctl judgement in the kernel by a BPF LSM program (gdrproxy run --lsm; the program is
// ioctl_lsm.bpf.c). The idea not to miss: the seccomp filter sees only a request number, so the
// requests it lets run untrapped (kernel_allow.h) would run on every fd; with this program loaded
// they run only on the granted nodes the policy allows them on, and no ioctl at all runs on a
// node of a guarded driver the sandbox was not granted. That is what lets a sandbox granted some
// GPUs, not all, skip the trap for the calls the policy allows whatever their parameters.
// Content-dependent calls still trap: the program never reads the caller's memory. Each refusal
// is reported after the fact (take_refusals), for the supervisor to say whose call on which node.
// Mechanism only: which (node, request) pairs are allowed comes from the policy through
// kernel_allowed_ioctls() and the grants.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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
  // Loads and attaches the program with these tables; nullptr and why (one line) when this
  // kernel or these privileges cannot.
  static std::unique_ptr<IoctlLsm> load(const IoctlLsmTables& tables, std::string& why);
  ~IoctlLsm();
  IoctlLsm(const IoctlLsm&) = delete;
  IoctlLsm& operator=(const IoctlLsm&) = delete;

  // Judges `pid` (a task not yet running the command) and every task it creates from now on.
  // Throws gdrproxy::Error when it cannot be marked.
  void judge(pid_t pid);

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
    std::string comm;  // the caller's, raw (the tenant's bytes: escape before printing)
  };
  // Readable (poll) when refusals wait to be taken.
  int refusals_fd() const;
  // Calls `each` for every refusal reported since the last call, oldest first.
  void take_refusals(const std::function<void(const Refusal&)>& each);

 private:
  IoctlLsm() = default;
  bpf_object* obj_ = nullptr;
  std::vector<bpf_link*> links_;
  int sandboxed_fd_ = -1, counters_fd_ = -1;
  ring_buffer* ring_ = nullptr;
  std::vector<Refusal> taken_;  // filled by the ring's callback while take_refusals consumes
};

}  // namespace gdrproxy::proxy
