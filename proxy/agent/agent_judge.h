// The agent's BPF LSM ioctl judge: one program judging every container in the kernel, each by its
// cgroup v2 and in a scope of its own (its grants' tables). The idea not to miss: the judge is in
// one of three states, decided once at start, and every other part of the agent asks it rather
// than the program: off (the agent alone judges; a profile may let run untrapped only what a
// container's session would allow unread), unpinned (scopes go with this agent) or pinned in
// bpffs (it outlives the agent: containers stay judged across a kill or an upgrade, and profiles
// may let requests on partly granted classes run untrapped). A container is judged from its
// creation (`ctl judge-pending`, a scope with no grant) until its handover gives it its own
// scope, and until its cgroup is gone; a refusal is said by its container's session.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxy/devices/device_catalog.h"
#include "proxy/engine/kernel_judgement.h"
#include "proxy/engine/session_config.h"
#include "proxy/sandbox/ioctl_lsm.h"
#include "proxy/sandbox/profile_untrapped.h"

namespace gdrproxy::proxy {

struct NvidiaDriver;

// A container's scope in the judge: its cgroup and tables go with it, unless left to the pins.
class JudgedScope {
 public:
  JudgedScope(IoctlLsm& lsm, uint32_t number) : lsm_(lsm), number_(number) {}
  ~JudgedScope() {
    if (!left_to_pins_) lsm_.forget_scope(number_);
  }
  // Left judged in the pinned judge when this agent stops (the next one takes it over).
  void leave_to_pins() { left_to_pins_ = true; }
  JudgedScope(const JudgedScope&) = delete;
  JudgedScope& operator=(const JudgedScope&) = delete;
  uint32_t number() const { return number_; }

 private:
  IoctlLsm& lsm_;
  const uint32_t number_;
  bool left_to_pins_ = false;
};

// What the judge made of a new container.
struct ContainerJudgement {
  std::unique_ptr<JudgedScope> scope;  // nullptr: not judged in the kernel (`why_not` says why)
  std::string why_not;
  uint32_t from_creation = 0;  // the pending scope its own replaced (0: none)
};

class AgentJudge {
 public:
  enum class State { kOff, kUnpinned, kPinned };
  using Log = std::function<void(const std::string&)>;
  // Says a refusal through the session of the container whose scope it names; false when no
  // container of this agent has that scope (the judge then says it itself).
  using SayRefusal = std::function<bool(const IoctlLsm::Refusal&)>;

  // --lsm and --lsm-pin: loads the judge now (before any container is adopted), or none when
  // `choice` is off or (auto) the kernel cannot run it. Throws gdrproxy::Error for --lsm on
  // without a judge.
  AgentJudge(boost::asio::io_context& io, LsmChoice choice, const std::optional<std::string>& pin,
             Log log, SayRefusal say);

  State state() const;
  bool on() const { return judge_ != nullptr; }

  // `ctl judge-pending PID ID` (`gdrproxy hook judge`, at the container's createRuntime): judges
  // the cgroup of process PID, the container's init, in a scope with no grant until its
  // handover. Answers one JSON line: "judged" "pending" or "already" (`judged_already` says its
  // cgroup has a container's scope), false with "why" (no judge, or --lsm auto and it cannot be
  // judged), or "error" (--lsm on: the runtime then fails the container's creation).
  std::string judge_pending(const std::string& args, const DeviceCatalog& catalog,
                            const std::function<bool(const std::string& cgroup)>& judged_already);

  // Decides how a new container whose processes run in `cgroup`, to be served with `cfg`, is
  // judged, and sets cfg.judged_per_device and cfg.kernel_allow to match: its own scope over
  // its cgroup (from its grants and the requests its profile lets run untrapped), or none
  // (`why_not`). `kill_why` is set when its profile lets run untrapped what its session would
  // not allow unread: its listener alone would not stop those calls, so it must not run. Throws
  // gdrproxy::Error when --lsm on cannot judge it.
  ContainerJudgement judge_container(SessionConfig& cfg, const std::string& cgroup,
                                     const ProfileUntrapped& untrapped, const NvidiaDriver& nvidia,
                                     const DeviceCatalog& catalog, std::string& kill_why);

  // The refusals waiting in the ring, said now (before a container's session ends).
  void take_refusals();

  // At the agent's stop, with its containers' scopes: a pinned judge keeps judging what still
  // runs (the next agent takes it over); one that judges nothing more is unpinned.
  void release(const std::vector<JudgedScope*>& scopes, size_t containers);

 private:
  void retire_other_judges(bool at_start);
  void sweep();
  void forget_pending_of_gone_cgroups();
  void say_unclaimed(const IoctlLsm::Refusal& f);
  // A scope over `cgroup` with `allowed`'s requests that `profile` lets through, taking over
  // its pending scope in one update (`from_creation`).
  std::unique_ptr<JudgedScope> scope_for(const CgroupV2& cgroup, const DeviceCatalog& catalog,
                                         const Grants& grants, const KernelAllowed& allowed,
                                         const std::vector<uint32_t>& profile,
                                         uint32_t& from_creation);

  // A container's cgroup judged from its creation until its handover: a scope with no grant,
  // so that the kernel refuses every ioctl on a guarded node from that cgroup until the
  // handover gives the container its own scope (in one update). Without it the container could
  // run, between the runtime's handover and the agent reading it, ioctls its filter never traps
  // on an fd it did not open.
  struct Pending {
    std::string id;  // the container, as the runtime's state named it
    std::string cgroup;
    std::unique_ptr<JudgedScope> scope;
  };

  const LsmChoice choice_;
  const Log log_;
  const SayRefusal say_;
  std::unique_ptr<IoctlLsm> judge_;
  std::optional<LsmRefusals> refusals_;
  boost::asio::steady_timer sweep_timer_;
  uint32_t last_scope_ = 0;
  bool other_judges_left_ = false;  // judges of other builds pinned beside ours, still judging
  // By their cgroup's id; declared after the judge: each forgets its scope in it when it goes.
  std::map<uint64_t, Pending> pending_;
};

}  // namespace gdrproxy::proxy
