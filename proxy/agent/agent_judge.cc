#include "proxy/agent/agent_judge.h"

#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/cgroup_v2.h"
#include "base/error.h"
#include "base/escape.h"
#include "base/process_info.h"
#include "base/unique_fd.h"
#include "proxy/agent/handover.h"
#include "proxy/engine/engine.h"

namespace gdrproxy::proxy {

AgentJudge::AgentJudge(boost::asio::io_context& io, LsmChoice choice,
                       const std::optional<std::string>& pin, Log log, SayRefusal say)
    : choice_(choice), log_(std::move(log)), say_(std::move(say)), sweep_timer_(io) {
  if (choice == LsmChoice::kOff) return;
  std::string why;
  judge_ = pin ? IoctlLsm::load_pinned(*pin, why) : IoctlLsm::load(why);
  if (!judge_ && pin && choice == LsmChoice::kAuto) {
    // Pins unusable: a judge for this agent's life is still better than none.
    const std::string pin_why = why;
    judge_ = IoctlLsm::load(why);
    if (judge_)
      log_("--lsm auto: " + pin_why +
           "; the judge is not pinned (containers whose profiles need a pinned one are refused)");
  }
  if (!judge_) {
    if (choice == LsmChoice::kOn) throw Error("--lsm on: " + why);
    log_("--lsm auto: " + why + "; containers' device ioctls are judged by the agent alone");
    return;
  }
  refusals_.emplace(io, *judge_, nullptr, [this](const IoctlLsm::Refusal& f) {
    if (!say_(f)) say_unclaimed(f);
  });
  if (judge_->inherited()) {
    // The containers an earlier agent judged stay judged until adopted again or gone.
    last_scope_ = judge_->highest_inherited_scope();
    log_("BPF LSM judge taken over from " + judge_->pinned_at() + ": " +
         std::to_string(judge_->inherited_cgroups()) +
         " cgroup(s) an earlier agent judged are judged still");
  } else {
    log_("BPF LSM judge loaded" +
         (judge_->pinned_at().empty()
              ? std::string()
              : " and pinned at " + judge_->pinned_at() + " (it outlives this agent)") +
         ": each container's ioctls are judged in the kernel by its cgroup");
  }
  retire_other_judges(true);
  sweep();
}

AgentJudge::State AgentJudge::state() const {
  if (!judge_) return State::kOff;
  return judge_->pinned_at().empty() ? State::kUnpinned : State::kPinned;
}

// Judges of other builds pinned beside this agent's (an upgrade's older one): each goes once the
// cgroups it judges are gone. Said at start (`at_start`) for each one found, later for each one
// removed.
void AgentJudge::retire_other_judges(bool at_start) {
  if (state() != State::kPinned || (!at_start && !other_judges_left_)) return;
  other_judges_left_ = false;
  for (const IoctlLsm::OtherJudge& o : judge_->retire_other_judges()) {
    if (o.cgroups > 0) {
      other_judges_left_ = true;
      if (at_start)
        log_("BPF LSM judge of another build pinned at " + o.dir + " still judges " +
             std::to_string(o.cgroups) + " cgroup(s): left until they are gone");
    } else {
      log_("BPF LSM judge of another build pinned at " + o.dir +
           (at_start ? " judges no cgroup that exists: unpinned"
                     : ": its last judged cgroup is gone: unpinned"));
    }
  }
}

void AgentJudge::release(const std::vector<JudgedScope*>& scopes, size_t containers) {
  if (state() != State::kPinned) return;
  if (containers == 0 && pending_.empty() && judge_->inherited_cgroups() == 0) {
    judge_->unpin();
    log_("BPF LSM judge unpinned from " + judge_->pinned_at() + ": no container left to judge");
    return;
  }
  for (JudgedScope* s : scopes) s->leave_to_pins();
  // Judged from their creation: the next agent inherits them, as it does containers.
  for (auto& [cg, p] : pending_) p.scope->leave_to_pins();
  log_("BPF LSM judge stays pinned at " + judge_->pinned_at() + ", judging " +
       std::to_string(containers + pending_.size()) +
       " container(s) until the next agent takes it over");
}

// A refusal whose wake-up the judge skipped (it wakes once per batch) waits at most a second.
void AgentJudge::sweep() {
  sweep_timer_.expires_after(std::chrono::seconds(1));
  sweep_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    refusals_->take();
    forget_pending_of_gone_cgroups();
    retire_other_judges(false);
    if (judge_->inherited_cgroups() > 0)
      if (const size_t gone = judge_->sweep_inherited())
        log_("BPF LSM judge: " + std::to_string(gone) +
             " cgroup(s) an earlier agent judged are gone, and forgotten");
    sweep();
  });
}

void AgentJudge::take_refusals() {
  if (refusals_) refusals_->take();
}

// A container judged from its creation whose cgroup is gone never came to be (its runtime
// failed, or it was refused): its scope goes.
void AgentJudge::forget_pending_of_gone_cgroups() {
  if (pending_.empty()) return;
  const UniqueFd root = cgroup2_root();
  std::erase_if(pending_, [&](const auto& p) {
    if (cgroup_v2_exists(root.get(), p.first)) return false;
    log_("container " + printable(p.second.id) +
         ": its cgroup is gone before its handover; no longer judged from its creation");
    return true;
  });
}

// A refusal no container of this agent claims: one judged from its creation, or one an earlier
// agent judged (pinned) and this one has not adopted again yet.
void AgentJudge::say_unclaimed(const IoctlLsm::Refusal& f) {
  std::string whose;
  for (const auto& [cg, p] : pending_)
    if (p.scope->number() == f.scope)
      whose = "of container " + printable(p.id) + ", judged from its creation, before its handover";
  if (whose.empty())
    whose = "of a container an earlier agent judged (scope " + std::to_string(f.scope) + ")";
  char line[160];
  std::snprintf(line, sizeof line,
                "BPF LSM judge refused ioctl 0x%08x on char device %u:%u by pid %d (ns pid %d, ",
                f.request, major(f.rdev), minor(f.rdev), f.tid, f.ns_tid);
  log_(line + printable(f.comm) + ") " + whose + " -> EPERM");
}

std::string AgentJudge::judge_pending(
    const std::string& args, const DeviceCatalog& catalog,
    const std::function<bool(const std::string& cgroup)>& judged_already) {
  const auto answer = [](nlohmann::json j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  };
  const size_t space = args.find(' ');
  const std::string pid_text = args.substr(0, space);
  const std::string id = space == std::string::npos ? "" : args.substr(space + 1);
  char* end = nullptr;
  const long pid = std::strtol(pid_text.c_str(), &end, 10);
  if (pid_text.empty() || *end != '\0' || pid <= 0 || pid > INT32_MAX)
    return answer({{"error", "expected judge-pending PID [ID]"}});
  const std::string who = "container " + printable(id) + " (pid " + pid_text + ")";
  if (!judge_) {
    const std::string why = choice_ == LsmChoice::kOff
                                ? "the agent runs without --lsm"
                                : "the agent has no BPF LSM judge (--lsm auto, none here)";
    log_(who + ": its runtime asks for a judge from its creation, but " + why +
         ": not judged in the kernel");
    return answer({{"judged", false}, {"why", why}});
  }
  const auto refuse = [&](const std::string& why) {
    log_(who + ": cannot be judged from its creation: " + why);
    if (choice_ == LsmChoice::kOn) return answer({{"error", "--lsm on: " + why}});
    return answer({{"judged", false}, {"why", why}});
  };
  const UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0)));
  ino_t pidns = 0;
  std::string cgroup;
  if (!pidfd || !verified_facts(pidfd.get(), static_cast<pid_t>(pid), pidns, cgroup))
    return answer({{"error", "process " + pid_text + " is gone"}});
  // A container's init has a mount namespace of its own; a host process does not, and judging
  // its cgroup would refuse the host's own device calls.
  if (mount_namespace_of(static_cast<pid_t>(pid)) == mount_namespace_of(::getpid()))
    return answer({{"error", "process " + pid_text +
                                 " shares the agent's mount namespace: not a container's"}});
  const std::string own = cgroup_of(::getpid());
  if (cgroup.empty() || cgroup == "/" || cgroup_at_or_below(own, cgroup))
    return refuse("its cgroup " + printable(cgroup) + " holds the agent itself");
  if (judged_already(cgroup)) return answer({{"judged", "already"}});
  std::string why;
  const std::optional<CgroupV2> at = cgroup_v2(cgroup, why);
  if (!at) return refuse(why);
  if (pending_.count(at->id)) return answer({{"judged", "pending"}});
  try {
    const uint32_t number = ++last_scope_;
    const Grants none = Grants::from_specs(catalog, std::vector<std::string>{});
    judge_->add_scope(number, container_lsm_tables(catalog, none, KernelAllowed{}, {}));
    auto scope = std::make_unique<JudgedScope>(*judge_, number);
    judge_->judge_cgroup(*at, number);
    pending_[at->id] = Pending{id, cgroup, std::move(scope)};
  } catch (const std::exception& e) {
    return refuse(e.what());
  }
  log_(who + ": judged in the kernel from its creation (cgroup " + printable(cgroup) +
       "): every ioctl on a guarded device refused until its handover");
  return answer({{"judged", "pending"}});
}

ContainerJudgement AgentJudge::judge_container(SessionConfig& cfg, const std::string& cgroup,
                                               const ProfileUntrapped& untrapped,
                                               const NvidiaDriver& nvidia,
                                               const DeviceCatalog& catalog,
                                               std::string& kill_why) {
  ContainerJudgement out;
  // Judged in the kernel by its cgroup, before its session serves a call. A pinned judge (one
  // that outlives this agent) lets its profile run requests untrapped on device classes only
  // partly granted, as `run --lsm` does.
  std::optional<CgroupV2> judged_at;
  if (judge_) judged_at = cgroup_v2(cgroup, out.why_not);
  cfg.judged_per_device = judged_at && state() == State::kPinned;
  const bool untrapped_asked = untrapped.unjudged || !untrapped.requests.empty();
  KernelAllowed ours;
  if (untrapped_asked) {
    std::string note;
    ours = container_untrapped_ioctls(cfg, nvidia, catalog, note);
  }
  if (judge_) {
    try {
      if (!judged_at) throw Error(out.why_not);
      out.scope =
          scope_for(*judged_at, catalog, cfg.grants, ours, untrapped.requests, out.from_creation);
    } catch (const std::exception& e) {
      out.why_not = e.what();
      if (choice_ == LsmChoice::kOn)
        throw Error("--lsm on: it cannot be judged in the kernel (" + out.why_not + ")");
    }
  }
  // --lsm auto serves it unjudged: a judgement from its creation would refuse it every call.
  if (!out.scope && judged_at) pending_.erase(judged_at->id);
  if (!out.scope) cfg.judged_per_device = false;  // not judged after all
  // What its profile lets run untrapped never reaches the agent: each request must be one this
  // container's session would allow unread, or the container must not run at all.
  if (untrapped_asked) {
    kill_why = profile_refusal(cfg, untrapped, nvidia, catalog);
    if (!kill_why.empty()) return out;
    cfg.kernel_allow = true;  // its stats then say what runs untrapped
  }
  return out;
}

// A scope of its own, with tables from its grants and the requests its profile lets run
// untrapped (`profile`, each allowed on the granted nodes of the class `allowed` lists it for),
// over its cgroup v2, which holds every process of it (those forked before this too) and every
// one `runc exec` adds. A cgroup judged from its creation moves to the new scope in one update.
std::unique_ptr<JudgedScope> AgentJudge::scope_for(
    const CgroupV2& cgroup, const DeviceCatalog& catalog, const Grants& grants,
    const KernelAllowed& allowed, const std::vector<uint32_t>& profile, uint32_t& from_creation) {
  const uint32_t number = ++last_scope_;
  judge_->add_scope(number, container_lsm_tables(catalog, grants, allowed, profile));
  auto scope = std::make_unique<JudgedScope>(*judge_, number);
  const auto pending = pending_.find(cgroup.id);
  const uint32_t replacing = pending != pending_.end() ? pending->second.scope->number() : 0;
  judge_->judge_cgroup(cgroup, number, replacing);
  if (replacing) {
    from_creation = replacing;
    pending_.erase(pending);
  }
  return scope;
}

}  // namespace gdrproxy::proxy
