#include "proxy/engine/kernel_judgement.h"

#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "base/error.h"
#include "base/escape.h"
#include "base/hex.h"
#include "base/unique_fd.h"
#include "proxy/engine/call_handler.h"
#include "proxy/engine/line_format.h"
#include "proxy/engine/session_setup.h"

namespace gdrproxy::proxy {
namespace {

// Whether every node of a device class is granted, and whether any is (one pass). A class with
// no catalogued node has neither: its driver may register later, and a node of it must then trap
// (and be refused), not meet requests let run untrapped.
struct ClassGrants {
  bool all = true, any = false;
};
ClassGrants class_grants(const DeviceCatalog& catalog, const Grants& grants, DeviceClass cls) {
  ClassGrants g;
  bool seen = false;
  for (const DeviceNode& n : catalog.nodes()) {
    if (n.device_class != cls) continue;
    seen = true;
    const bool granted = grants.granted(n);
    g.all = g.all && granted;
    g.any = g.any || granted;
  }
  g.all = g.all && seen;
  return g;
}

void unread_allow(const KernelJudgementFacts& f, KernelJudgement& j) {
  if (f.mode != Mode::kEnforce || f.tracing || !f.nvidia_enforced || !f.nvidia_abi) return;
  // The fd's node is checked granted before this applies, so every class qualifies.
  KernelAllowFacts facts;
  facts.nvidia_abi = f.nvidia_abi;
  facts.nvidia_frontend_any_granted = facts.nvidia_uvm_any_granted = true;
  facts.judged_per_device = true;
  KernelAllowed unconditional = kernel_allowed_ioctls(f.policy, facts);
  j.unread_uvm = std::move(unconditional.uvm_requests);
  j.unread_frontend = std::move(unconditional.frontend_requests);
  std::sort(j.unread_uvm.begin(), j.unread_uvm.end());
  std::sort(j.unread_frontend.begin(), j.unread_frontend.end());
}

}  // namespace

KernelAllowed container_untrapped_ioctls(const SessionConfig& config, const NvidiaDriver& nv,
                                         const DeviceCatalog& catalog, std::string& note) {
  SessionConfig c = config;
  c.kernel_allow = true;
  c.lsm = LsmChoice::kOff;
  const Enforcement enforcement = enforcement_for(c, nv, catalog, note);
  return kernel_judgement_for(c, nv, catalog, c.trace_text || c.trace_json.has_value(), enforcement,
                              note)
      .allowed;
}

std::vector<uint32_t> host_container_untrapped_ioctls(
    const Policy& policy, const std::vector<std::string>& grants, const std::string& dev_root,
    std::string& note, bool judged_per_device, const std::optional<std::string>& nvidia_abi_as) {
  Engine engine(DeviceCatalog::scan(dev_root), nvidia_abi_as);
  SessionConfig c = planned_session(policy, engine.catalog(), grants, std::nullopt);
  c.judged_per_device = judged_per_device;
  return container_untrapped_ioctls(c, engine.nvidia(), engine.catalog(), note).requests;
}

std::string profile_refusal(const SessionConfig& config, const ProfileUntrapped& untrapped,
                            const NvidiaDriver& nvidia, const DeviceCatalog& catalog) {
  const auto allowed = [&](const SessionConfig& c) {
    std::string note;
    return container_untrapped_ioctls(c, nvidia, catalog, note).requests;
  };
  std::string why;
  if (untrapped_agrees(untrapped, allowed(config), why)) return "";
  // A profile made for a judged container (`oci prepare --lsm-judged`) says so.
  SessionConfig judged = config;
  judged.judged_per_device = true;
  std::string unused;
  if (!config.judged_per_device && untrapped_agrees(untrapped, allowed(judged), unused))
    why +=
        " (device classes only partly granted need the agent's pinned BPF LSM judge over the "
        "container's cgroup: agent --lsm on --lsm-pin DIR)";
  return why;
}

bool untrapped_agrees(const ProfileUntrapped& profile, const std::vector<uint32_t>& allowed,
                      std::string& why) {
  if (profile.unjudged) {
    why = "its profile's " + *profile.unjudged + ", which the agent cannot judge";
    return false;
  }
  for (const uint32_t r : profile.requests)
    if (!std::binary_search(allowed.begin(), allowed.end(), r)) {
      why = "its profile lets ioctl " + hex(r) +
            " run untrapped, which its rule's policy, mode and trace do not allow unread";
      return false;
    }
  return true;
}

IoctlLsmTables container_lsm_tables(const DeviceCatalog& catalog, const Grants& grants,
                                    const KernelAllowed& allowed,
                                    const std::vector<uint32_t>& profile) {
  const auto in_profile = [&profile](std::vector<uint32_t> v) {
    std::erase_if(
        v, [&](uint32_t r) { return !std::binary_search(profile.begin(), profile.end(), r); });
    return v;
  };
  KernelAllowed judged;
  judged.requests = profile;
  judged.uvm_requests = in_profile(allowed.uvm_requests);
  judged.frontend_requests = in_profile(allowed.frontend_requests);
  return ioctl_lsm_tables(catalog, grants, judged);
}

bool every_gpu_granted(const DeviceCatalog& catalog, const Grants& grants) {
  for (const DeviceNode& n : catalog.nodes())
    if (n.device_class == DeviceClass::kNvidiaFrontend && n.name != "nvidiactl" &&
        !grants.granted(n))
      return false;
  return true;
}

KernelJudgement kernel_judgement(const KernelJudgementFacts& f, std::string& note) {
  KernelJudgement j;
  const bool untrapped_ok =
      f.kernel_allow && f.mode == Mode::kEnforce && !f.tracing && f.nvidia_enforced;
  KernelAllowFacts facts;
  if (untrapped_ok) {
    facts.nvidia_abi = f.nvidia_abi;
    const ClassGrants frontend = class_grants(f.catalog, f.grants, DeviceClass::kNvidiaFrontend);
    const ClassGrants uvm = class_grants(f.catalog, f.grants, DeviceClass::kNvidiaUvm);
    facts.nvidia_frontend_all_granted = frontend.all;
    facts.nvidia_frontend_any_granted = frontend.any;
    facts.nvidia_uvm_all_granted = uvm.all;
    facts.nvidia_uvm_any_granted = uvm.any;
    facts.judged_per_device = f.judged_elsewhere;
  }
  if (f.lsm != LsmChoice::kOff) {
    // With the judge, requests may run untrapped on some granted nodes of a class; without it
    // (below) only where every node of the class is granted. Without untrapped requests (a
    // trace, trace mode) it still refuses every ioctl on an ungranted node in the kernel.
    KernelAllowFacts judged = facts;
    judged.judged_per_device = true;
    KernelAllowed untrapped;
    if (untrapped_ok) untrapped = kernel_allowed_ioctls(f.policy, judged);
    std::string why;
    j.lsm = IoctlLsm::load(why);
    if (j.lsm) {
      j.lsm->add_scope(kSessionScope, ioctl_lsm_tables(f.catalog, f.grants, untrapped));
      j.allowed = std::move(untrapped);
      return j;
    }
    if (f.lsm == LsmChoice::kOn) throw Error("--lsm on: " + why);
    note = "--lsm auto: " + why + "; device ioctls are judged by gdrproxy alone";
  }
  if (untrapped_ok) j.allowed = kernel_allowed_ioctls(f.policy, facts);
  unread_allow(f, j);
  return j;
}

std::string lsm_refusal(const IoctlLsm::Refusal& f, const DeviceNode* node, DenialLog& said,
                        TraceRecord& r) {
  const std::string number = std::to_string(major(f.rdev)) + ":" + std::to_string(minor(f.rdev));
  const std::string device = node ? node->name : "char device " + number;
  std::string reason;
  switch (f.why) {
    case IoctlLsm::Refusal::Why::kUngranted:
      reason = "device " + device + " is not granted";
      break;
    case IoctlLsm::Refusal::Why::kUnknownMinor:
      reason =
          "char device " + number + " belongs to a guarded driver but is no device gdrproxy knows";
      break;
    case IoctlLsm::Refusal::Why::kNotAllowedHere:
      reason =
          "the request runs untrapped only on the granted devices the policy allows it on, "
          "not on " +
          device;
      break;
  }
  std::string line;
  r.call = undecoded_call(node ? node->device_class : DeviceClass::kUnknown, f.request);
  if (said.first(static_cast<uint32_t>(f.tgid), device, reason))
    format_line(line,
                "denied %s on %s by pid %d (ns pid %d, %s) in the kernel (BPF LSM): %s -> EPERM",
                r.call.name.c_str(), node ? node->path.c_str() : number.c_str(), f.tid, f.ns_tid,
                printable(f.comm).c_str(), printable(reason).c_str());
  r.who.host_tid = static_cast<uint32_t>(f.tid);
  r.who.host_tgid = static_cast<uint32_t>(f.tgid);
  r.who.ns_tid = static_cast<uint32_t>(f.ns_tid);
  r.who.comm = f.comm;
  r.syscall = "ioctl";
  r.device = device;
  r.decision = "deny";
  r.ret = -1;
  r.err = EPERM;
  r.reason = reason;
  r.note = "refused in the kernel by the BPF LSM judge; the fd is not known";
  return line;
}

LsmRefusals::LsmRefusals(boost::asio::io_context& loop, IoctlLsm& lsm, std::mutex* mu, Each each)
    : lsm_(lsm), mu_(mu), each_(std::move(each)), ring_(loop) {
  UniqueFd ring(::dup(lsm.refusals_fd()));
  if (!ring) throw_errno("BPF LSM: the refusals' ring", errno);
  ring_.assign(ring.release());
  arm();
}

void LsmRefusals::arm() {
  ring_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                   [this](const boost::system::error_code& ec) {
                     if (ec) return;
                     if (mu_) {
                       std::lock_guard<std::mutex> lock(*mu_);
                       take();
                     } else {
                       take();
                     }
                     arm();
                   });
}

void LsmRefusals::take() {
  lsm_.take_refusals(each_);
}

}  // namespace gdrproxy::proxy
