// What the kernel judges for a session so that its receivers need not: the ioctl requests the
// filter lets run untrapped (proxy/sandbox/kernel_allow.h), the BPF LSM judge of ioctls by device
// number (proxy/sandbox/ioctl_lsm.h), and, when such a request traps anyway, the set the call
// handler allows without reading its parameters. The idea not to miss: an untrapped request never
// meets the supervisor's device check, so it qualifies only where that check could not refuse it
// (every node of its class granted, or the LSM judge refusing it on the others), and only in
// enforce mode without a trace, where nothing is recorded of it; the unread set is the same
// computed as if every class qualified, because the handler checks the fd's node first.
// This is the one owner of what runs untrapped and what the kernel judges: `run`'s filter and
// judge come from kernel_judgement(); an OCI profile's untrapped ALLOW rules and the agent's
// check of them (container_untrapped_ioctls(), host_container_untrapped_ioctls() and
// profile_refusal() below run kernel_judgement() as that container's session would); the agent
// judge's tables (container_lsm_tables() below).
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "proxy/abi/nvidia_abi.h"
#include "proxy/devices/device_catalog.h"
#include "proxy/engine/call_inputs.h"
#include "proxy/engine/denial_log.h"
#include "proxy/engine/session_config.h"
#include "proxy/policy/policy.h"
#include "proxy/sandbox/ioctl_lsm.h"
#include "proxy/sandbox/kernel_allow.h"
#include "proxy/sandbox/profile_untrapped.h"
#include "proxy/trace/trace_record.h"

namespace gdrproxy::proxy {

struct NvidiaDriver;

struct KernelJudgementFacts {
  const DeviceCatalog& catalog;
  const Grants& grants;
  const Policy& policy;
  const NvidiaDriverAbi* nvidia_abi = nullptr;  // the tables NVIDIA calls are named with
  bool kernel_allow = false;                    // the session's config asks for untrapped requests
  LsmChoice lsm = LsmChoice::kOff;
  Mode mode = Mode::kEnforce;
  bool tracing = false;
  bool nvidia_enforced = true;    // the unknown-driver rule (proxy/policy/enforcement.h)
  bool judged_elsewhere = false;  // SessionConfig::judged_per_device
};

// The scope a session's own judge (`run --lsm`) judges its sandbox in (IoctlLsm: one of many).
constexpr uint32_t kSessionScope = 1;

struct KernelJudgement {
  KernelAllowed allowed;          // the requests the filter lets run untrapped
  std::unique_ptr<IoctlLsm> lsm;  // the BPF LSM judge, when loaded
  // Allowed by the handler without a read when they trap anyway, on a granted node of their
  // class (sorted; empty with the LSM judge, which refuses them on the other nodes itself).
  std::vector<uint32_t> unread_uvm, unread_frontend;
};

// Throws gdrproxy::Error with --lsm on where the kernel cannot run the judge; with --lsm auto,
// `note` says why it goes on without.
KernelJudgement kernel_judgement(const KernelJudgementFacts& f, std::string& note);

// The requests an OCI profile may let run untrapped for a container served with `config` (its
// grants, policy, mode and trace): what that session would let its own filter run, without the
// BPF LSM judge (a runtime loads none), or with the agent's where config.judged_per_device. `oci
// prepare --kernel-allow` and the runtime shim write them (proxy/sandbox/profile_untrapped.h); the
// agent requires a profile's to be among them.
KernelAllowed container_untrapped_ioctls(const SessionConfig& config, const NvidiaDriver& nvidia,
                                         const DeviceCatalog& catalog, std::string& note);

// The same for a container granted `grants` (names or /dev paths) under `policy` in the policy's
// mode, without a trace, on this host: the catalog at `dev_root` and the loaded NVIDIA driver.
// `judged_per_device`: for an agent whose pinned BPF LSM judge judges the container.
// `nvidia_abi_as`: the release whose tables judge the NVIDIA driver, as the agent is told.
std::vector<uint32_t> host_container_untrapped_ioctls(
    const Policy& policy, const std::vector<std::string>& grants, const std::string& dev_root,
    std::string& note, bool judged_per_device = false,
    const std::optional<std::string>& nvidia_abi_as = std::nullopt);

// Why an agent's container whose profile lets `untrapped` run untrapped must not run when served
// with `config`: "" when every such request is one its session would let its own filter run
// (container_untrapped_ioctls); else the first that is not (untrapped_agrees), with what would
// make it agree where that would (the agent's pinned BPF LSM judge over its cgroup).
std::string profile_refusal(const SessionConfig& config, const ProfileUntrapped& untrapped,
                            const NvidiaDriver& nvidia, const DeviceCatalog& catalog);

// An agent's container, whose runtime installed its profile: whether every request the profile
// lets run untrapped is in `allowed` (what the container's session would let its own filter run,
// container_untrapped_ioctls); `why` names the first that is not, or the rule
// whose effect only libseccomp's ordering decides (ProfileUntrapped::unjudged).
bool untrapped_agrees(const ProfileUntrapped& profile, const std::vector<uint32_t>& allowed,
                      std::string& why);

// The BPF LSM tables of an agent's container judged by its cgroup: its grants, and of the
// requests `allowed` lets run untrapped only those its profile (`profile`, sorted) lets through;
// the others trap, and the agent judges them.
IoctlLsmTables container_lsm_tables(const DeviceCatalog& catalog, const Grants& grants,
                                    const KernelAllowed& allowed,
                                    const std::vector<uint32_t>& profile);

// Every NVIDIA GPU node of `catalog` is granted: device objects then need no GPU check.
bool every_gpu_granted(const DeviceCatalog& catalog, const Grants& grants);

// A refusal of the BPF LSM judge, said as the supervisor's own are: its line (returned; empty
// when `said` has said it for that process, node and reason) and its record `r` (but its
// sequence number and time). The caller already has its EPERM, so the line follows the call.
std::string lsm_refusal(const IoctlLsm::Refusal& f, const DeviceNode* node, DenialLog& said,
                        TraceRecord& r);

// The BPF LSM judge's refusals, waited for on a loop: each wake-up takes what the ring holds
// (under `mu` when given) and hands each refusal to `each`: the session it was made for says it.
class LsmRefusals {
 public:
  using Each = std::function<void(const IoctlLsm::Refusal&)>;
  LsmRefusals(boost::asio::io_context& loop, IoctlLsm& lsm, std::mutex* mu, Each each);
  // What the ring holds now (the sweep's turn, should a wake-up be skipped; after the loop
  // stopped), under the caller's lock.
  void take();
  void cancel() { ring_.cancel(); }

 private:
  void arm();
  IoctlLsm& lsm_;
  std::mutex* const mu_;
  const Each each_;
  boost::asio::posix::stream_descriptor ring_;
};

}  // namespace gdrproxy::proxy
