// The agent's registry of containers and their lifecycle, on the engine's loop. A process arrives
// as a handover (runtime_intake.h from a runtime, or the fd store after a restart); it is checked
// (a seccomp listener, alive, its pid namespace and cgroup through its pidfd), its bundle read off
// the loop (bundle_reads.h), and then either joins its container's session or makes that
// container: its session planned from the operator's rule (container_plan.h), judged in the
// kernel or not (agent_judge.h). A container ends when every listener of it has hung up; the
// registry then drops it. The control socket sees the registry through ControlVerbs only.
#include "proxy/agent/agent.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "base/escape.h"
#include "base/file_io.h"
#include "base/lists.h"
#include "base/unix_request.h"
#include "proxy/agent/agent_config.h"
#include "proxy/agent/agent_judge.h"
#include "proxy/agent/agent_start_count.h"
#include "proxy/agent/bundle_reads.h"
#include "proxy/agent/container_plan.h"
#include "proxy/agent/control_socket.h"
#include "proxy/agent/fd_store.h"
#include "proxy/agent/handover.h"
#include "proxy/agent/listener_check.h"
#include "proxy/agent/metrics_registry.h"
#include "proxy/agent/metrics_server.h"
#include "proxy/agent/metrics_text.h"
#include "proxy/agent/runtime_intake.h"
#include "proxy/agent/served_container.h"
#include "proxy/engine/engine.h"
#include "proxy/engine/session.h"
#include "proxy/oci/hook_command.h"

namespace gdrproxy::proxy {
namespace {

namespace asio = boost::asio;

// A process its runtime did not name (pid 0) for a container not served.
constexpr const char* kUnnamedOutsideAContainer =
    " refused: its runtime named no process (pid 0), which may only join a container this agent "
    "serves already (crun's exec); its trapped calls fail with ENOSYS";

// Bundle reads past their deadline (their thread blocked on a filesystem that does not answer)
// after which handovers are refused at once.
constexpr size_t kMaxStuckBundleReads = 8;

class Agent : public ControlVerbs {
 public:
  Agent(const AgentOptions& o, AgentConfig config)
      : opts_(o),
        config_(std::move(config)),
        // The command line's choice of NVIDIA tables over the config's.
        engine_(DeviceCatalog::scan(o.dev_root),
                o.nvidia_abi_as ? o.nvidia_abi_as : config_.nvidia_abi_as),
        // The control socket first: its check finds an agent that still serves these paths
        // (the runtime socket may be one the fd store kept for us, which answers while no
        // agent runs).
        control_(engine_.io(), o.ctl_socket, std::chrono::milliseconds(o.handshake_deadline_ms),
                 o.max_handshakes, log_to(), &previous_agent_stuck_),
        store_(!o.fd_store           ? std::nullopt
               : o.fd_store_external ? std::optional(FdStoreClient::connect_external(
                                           *o.fd_store, kExternalHolderWait))
                                     : std::optional(FdStoreClient::connect_or_start(*o.fd_store))),
        intake_(engine_.io(), o, store_ ? &*store_ : nullptr, log_to(),
                [this](const ContainerProcessState& st, Handover h, const std::string& json) {
                  begin_adoption(st, std::move(h), json);
                }),
        signals_(engine_.io(), SIGTERM, SIGINT) {}

  // A stop is a restart when the fd store keeps the containers (systemd's restart and an upgrade
  // send SIGTERM): the runtime socket stays, kept listening by the holder, so that runtimes wait
  // in its backlog for the next agent as they do after a kill. A drained agent is going away:
  // its socket goes, and runtimes are refused.
  ~Agent() override {
    if (!store_ || draining_) ::unlink(opts_.socket.c_str());
    ::unlink(opts_.ctl_socket.c_str());
  }

  int run() {
    ::signal(SIGPIPE, SIG_IGN);
    // First: --lsm on without a judge serves nothing.
    judge_.emplace(engine_.io(), opts_.lsm, opts_.lsm_pin, log_to(),
                   [this](const IoctlLsm::Refusal& f) { return say_refusal(f); });
    control_.serve(*this);
    const AgentStarts starts = record_agent_start(dirname_of(opts_.ctl_socket));
    restarts_ = starts.before;
    if (!starts.note.empty()) log(starts.note);
    if (opts_.metrics) {
      metrics_server_.emplace(engine_.io(), parse_metrics_address(*opts_.metrics),
                              std::chrono::milliseconds(opts_.handshake_deadline_ms), log_to());
      metrics_server_->serve([this] { return render_metrics(metrics_snapshot()); });
    }
    signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      log("stopping on signal " + std::to_string(sig) + ": " + std::to_string(containers_.size()) +
          (store_ ? " container(s) stay in the fd store for the next agent (their trapped calls "
                    "wait), and so does the runtime socket (runtimes wait in its backlog)"
                  : " container(s) lose their listener (their trapped calls fail with ENOSYS)"));
      engine_.io().stop();
    });
    // The agent runs for long: it waits for the trap copies, and says if they are unavailable.
    engine_.start_trap_copies(opts_.trap_copy);
    if (const std::string why = engine_.trap_copies_unavailable(); !why.empty())
      log("trap copies unavailable (" + why +
          "): every trapped ioctl's fd and argument are looked up by the agent");
    intake_.reattach(previous_agent_stuck_);
    intake_.serve();
    watch_holder();
    // Rails a container's poststop never gave back (a runtime killed, a failed hook).
    if (restore_rails_of_gone_containers(opts_.rail_state_dir,
                                         [this](const std::string& line) { log(line); }) != 0)
      log("some rails could not be given back: gdrproxy hook sweep --state-dir " +
          opts_.rail_state_dir + " retries");
    if (const std::string& n = engine_.nvidia().notice; !n.empty()) log(n);
    log("serving " + opts_.socket + " (control: " + opts_.ctl_socket + ")");
    engine_.io().run();
    // Results still in the observer's ring (it is drained every few milliseconds) go to their
    // sessions' records first; only what has not returned is "the agent stopped".
    // (A session stuck in a call is left to the loop below, which asks it again.)
    for (auto& [id, c] : containers_) static_cast<void>(c->session->stop());
    engine_.drain_observer();
    for (auto& [id, c] : containers_) {
      if (!c->session->stop()) {
        // Its thread is blocked in the kernel on the tenant: left to the process's exit.
        log("container " + id + ": its session is stuck in a call, left running until exit");
        static_cast<void>(c->session.release());
        continue;
      }
      c->session->finish("the agent stopped");
    }
    std::vector<JudgedScope*> scopes;
    for (auto& [id, c] : containers_)
      if (c->judged.scope) scopes.push_back(c->judged.scope.get());
    judge_->release(scopes, containers_.size());
    containers_.clear();
    return 0;
  }

  // ControlVerbs: a copy of what each container is, for `ctl list` and `ctl stats`.
  std::vector<ContainerView> containers(bool with_stats) const override {
    std::vector<ContainerView> out;
    for (const auto& [id, c] : containers_) {
      ContainerView v;
      v.id = id;
      v.pid = c->pid;
      v.pidns = c->pidns;
      v.cgroup = c->cgroup;
      v.status = c->status;
      v.bundle = c->bundle;
      v.rule = c->rule;
      v.pod = c->pod;
      v.grants = c->grants;
      v.mode = c->mode;
      v.listeners = c->listeners;
      v.draining = c->draining || draining_;
      if (judge_->on()) v.judged_in_kernel = c->judged.scope ? "cgroup" : c->judged.why_not;
      if (with_stats) v.stats = c->session->stats();
      out.push_back(std::move(v));
    }
    return out;
  }
  size_t drain_all() override {
    draining_ = true;
    log("draining: no new container or process is taken; stopping when the last of " +
        std::to_string(containers_.size()) + " container(s) ends");
    if (containers_.empty()) engine_.io().stop();
    return containers_.size();
  }
  bool drain(const std::string& id) override {
    auto it = containers_.find(id);
    if (it == containers_.end()) return false;
    it->second->draining = true;
    log("container " + id + ": draining (no new process joins it)");
    return true;
  }
  std::string judge_pending(const std::string& args) override {
    return judge_->judge_pending(args, *engine_.live_catalog().refreshed(),
                                 [this](const std::string& cgroup) {
                                   for (const auto& [cid, c] : containers_)
                                     if (c->judged.scope && c->cgroup == cgroup) return true;
                                   return false;
                                 });
  }

 private:
  void log(const std::string& msg) const {
    if (!opts_.quiet) std::fprintf(stderr, "gdrproxy agent: %s\n", printable(msg).c_str());
  }
  AgentLog log_to() {
    return [this](const std::string& msg) { log(msg); };
  }
  // A handover refused: its listener closed (its process's trapped calls fail with ENOSYS). One
  // the fd store kept for this agent across a restart is a listener lost.
  void refuse_handover(Handover& h, const std::string& id) {
    metrics_.adoption(AdoptionOutcome::kRefused);
    if (h.from_previous_agent) metrics_.listener_lost();
    let_go(h, id, store_ ? &*store_ : nullptr);
  }
  // What a scrape shows: the registry's counts and what the live containers are now.
  MetricsSnapshot metrics_snapshot() const {
    MetricsSnapshot s = metrics_.snapshot();
    for (const auto& [id, c] : containers_) {
      ++(c->mode == Mode::kEnforce ? s.containers_enforce : s.containers_trace);
      if (c->session->degraded()) ++s.containers_degraded;
      s.trace_bytes += c->session->trace_bytes();
    }
    s.start_time_seconds = start_time_;
    s.restarts = restarts_;
    switch (judge_ ? judge_->state() : AgentJudge::State::kOff) {
      case AgentJudge::State::kOff:
        s.judge_state = "off";
        break;
      case AgentJudge::State::kUnpinned:
        s.judge_state = "unpinned";
        break;
      case AgentJudge::State::kPinned:
        s.judge_state = "pinned";
        break;
    }
    return s;
  }
  JoinContext join_context() {
    return {store_ ? &*store_ : nullptr, log_to(), engine_.io(), [this] { check_holder(); }};
  }

  // Adopts a handover in two steps: the process is checked now (a seccomp listener, alive, its
  // pid namespace and cgroup through its pidfd); its bundle is read on a thread of its own
  // (bundle_reads.h: a hung filesystem must not hold the loop), and the adoption finishes on the
  // loop with that answer. A refusal at either step lets the handover go.
  void begin_adoption(const ContainerProcessState& st, Handover handover, const std::string& json) {
    auto h = std::make_shared<Handover>(std::move(handover));
    if (std::string why; !checked_process(st, *h, why)) {
      log(process_name(st) + why);
      refuse_handover(*h, st.state.id);
      return;
    }
    // A process its runtime did not name joins a container served already, whose bundle is the
    // one read (crun's exec reports ".").
    std::string bundle_dir = st.state.bundle;
    if (st.pid == 0) {
      const auto it = containers_.find(st.state.id);
      if (it == containers_.end() || it->second->session->ended()) {
        log(process_name(st) + kUnnamedOutsideAContainer);
        refuse_handover(*h, st.state.id);
        return;
      }
      bundle_dir = it->second->bundle;
    }
    const auto finish = [this, st, h, json](BundleReads::Result bundle) {
      const std::string who = process_name(st);
      try {
        const bool joins = containers_.contains(st.state.id);
        if (!bundle.ok) {
          log(who + " refused: " + bundle.why + " (its trapped calls fail with ENOSYS)");
        } else if (adopt(st, *h, json, bundle.untrapped, bundle.pod)) {
          metrics_.adoption(h->from_previous_agent ? AdoptionOutcome::kReattached
                            : joins                ? AdoptionOutcome::kJoined
                                                   : AdoptionOutcome::kNewContainer);
          if (h->from_previous_agent)
            log("container " + st.state.id + ": re-attached from the fd store " + store_->path() +
                " (process " + std::to_string(st.pid) + ")");
          return;
        }
      } catch (const std::exception& e) {
        log(who + ": internal error while adopting it: " + e.what());
        if (!h->listener) return;  // a session has it
      }
      refuse_handover(*h, st.state.id);
    };
    try {
      bundle_reads_.check(bundle_dir, opts_.socket, st.metadata, finish);
    } catch (const std::exception& e) {  // no thread could be started
      log(process_name(st) + ": its bundle cannot be read (" + e.what() + "): listener closed");
      refuse_handover(*h, st.state.id);
    }
  }

  // The last step: gives the checked process's listener to its container's session, made on
  // first sight (`h.listener` is then empty); its bundle has been found to hand its listener to
  // this agent, its profile letting `untrapped` run without a trap, its annotations naming `pod`.
  // False: refused (the caller lets it go: that process's trapped calls then fail with ENOSYS).
  bool adopt(const ContainerProcessState& st, Handover& h, const std::string& json,
             const ProfileUntrapped& untrapped, const PodIdentity& pod) {
    const std::string& id = st.state.id;
    const std::string who = process_name(st);
    auto it = containers_.find(id);
    if (draining_ || (it != containers_.end() && it->second->draining)) {
      log(who + " refused: " + (draining_ ? "the agent is draining" : "the container is draining") +
          " (its trapped calls fail with ENOSYS)");
      return false;
    }
    if (it != containers_.end() && !it->second->session->ended())
      return st.pid == 0 ? join_unnamed(*it->second, st, h, json, untrapped, join_context())
                         : join(*it->second, st, h, json, untrapped, join_context());
    if (st.pid == 0) {  // its container ended while its bundle was read
      log(who + kUnnamedOutsideAContainer);
      return false;
    }
    auto c = std::make_unique<ServedContainer>();
    c->id = id;
    c->bundle = st.state.bundle;
    c->status = container_status_name(st.state.status);
    c->metadata = st.metadata;
    c->pod = pod;
    c->pid = st.pid;
    c->pidns = h.pidns;
    c->cgroup = h.cgroup;
    const ContainerRule& rule = config_.rule_for(id, st.state.bundle, st.metadata);
    c->rule = rule.origin;
    c->group = rule.pidfd_getfd_group;
    try {
      const std::shared_ptr<const DeviceCatalog> catalog = engine_.live_catalog().refreshed();
      SessionConfig cfg = plan_container(
          id, rule, st.metadata,
          rule.policy_file ? Policy::load_file(*rule.policy_file) : Policy::builtin_default(),
          *catalog, {opts_.trace_dir, opts_.quiet, opts_.sync_wakeup, opts_.blocking_deadline_ms});
      // Re-attached after a restart: its trace keeps what the previous agent recorded.
      cfg.trace_append = h.from_previous_agent;
      std::string kill_why;
      c->judged =
          judge_->judge_container(cfg, c->cgroup, untrapped, engine_.nvidia(), *catalog, kill_why);
      if (!kill_why.empty()) {
        kill_refused(h.pidfd.get(), who, kill_why, log_to());
        return false;
      }
      c->grants = cfg.grants.all() ? std::vector<std::string>{"(all)"} : cfg.grants.names();
      c->mode = cfg.mode;
      cfg.metrics = metrics_.container_started(id);
      c->session = std::make_unique<Session>(engine_, std::move(cfg));
    } catch (const std::exception& e) {
      if (it == containers_.end()) metrics_.container_ended(id, 0);
      log("container " + id + ": " + e.what() + ": listener closed");
      return false;
    }
    c->session->set_pid_namespace(c->pidns);
    if (c->group) {
      // Another container of the same group, alive now, owns that pid namespace.
      // Asked on the session's thread: the group table, not containers_, which is the loop's.
      c->session->set_peer_namespaces([this, group = *c->group, id](ino_t ns) {
        std::lock_guard<std::mutex> lock(groups_mu_);
        const auto [b, e] = group_members_.equal_range(group);
        for (auto m = b; m != e; ++m)
          if (m->second.first != id && m->second.second == ns) return true;
        return false;
      });
      std::lock_guard<std::mutex> lock(groups_mu_);
      group_members_.emplace(*c->group, std::make_pair(id, c->pidns));
    }
    c->session->on_end([this, id] {
      // Not from inside the session's own handler: drop it on the next turn of the loop.
      asio::post(engine_.io(), [this, id] { drop(id); });
    });
    c->session->watch_init(h.pidfd.get());
    give_listener(*c, h, st, json, join_context());
    static_cast<void>(h.pidfd.release());  // the session's now
    c->listeners = 1;
    const std::string g = join_list(c->grants);
    log(who + " (" + c->status + ")" + pod_identity_said(c->pod) + ", rule " + c->rule +
        ", grants [" + g + "], mode " + (c->mode == Mode::kEnforce ? "enforce" : "trace") +
        (rule.broker_pidfd_getfd
             ? ", pidfd_getfd brokered" + (c->group ? " in group " + *c->group : std::string())
             : std::string()) +
        (judge_->on() ? (c->judged.scope ? ", judged in the kernel (BPF LSM) by its cgroup"
                                         : ", not judged in the kernel: " + c->judged.why_not)
                      : std::string()));
    containers_[id] = std::move(c);
    return true;
  }

  // A refusal of the judge, said by the session of the container it was made for.
  bool say_refusal(const IoctlLsm::Refusal& f) {
    for (const auto& [id, c] : containers_)
      if (c->judged.scope &&
          (c->judged.scope->number() == f.scope || c->judged.from_creation == f.scope)) {
        c->session->say_kernel_refusal(f);
        return true;
      }
    return false;
  }

  void drop(const std::string& id) {
    auto it = containers_.find(id);
    if (it == containers_.end() || !it->second->session->ended()) return;
    // What the judge refused for it last is said by its session, before that ends.
    judge_->take_refusals();
    // An ended session's thread has nothing left to wait for: it stops at once.
    if (!it->second->session->stop()) return;
    // Its last results may still wait in the observer's ring: taken first, or its last calls
    // would be recorded as never returned.
    engine_.drain_observer();
    it->second->session->finish("the container exited before the call returned");
    {
      std::lock_guard<std::mutex> lock(groups_mu_);
      std::erase_if(group_members_, [&id](const auto& m) { return m.second.first == id; });
    }
    const SessionStats s = it->second->session->stats();
    char lat[64];
    std::snprintf(lat, sizeof lat, ", handler p50 %.1f us, p99 %.1f us", double(s.p50_ns) / 1e3,
                  double(s.p99_ns) / 1e3);
    log("container " + id + " ended: " + std::to_string(s.ioctls) + " ioctl, " +
        std::to_string(s.opens) + " open, " + std::to_string(s.denied) + " denied" +
        (it->second->judged.scope
             ? ", " + std::to_string(s.kernel_refused) + " refused in the kernel"
             : "") +
        lat);
    metrics_.container_ended(id, it->second->session->trace_bytes());
    // Its fd-store entries went when their processes exited: the holder drops them itself.
    if (store_) store_->forget_copies_of(id);
    containers_.erase(it);
    if (draining_ && containers_.empty()) {
      log("drained: the last container ended, stopping");
      engine_.io().stop();
    }
  }

  // The fd-store holder, checked each second: one that was killed is replaced, with every live
  // process's entry, so that the next restart of the agent still finds them.
  void watch_holder() {
    if (!store_) return;
    holder_timer_.expires_after(std::chrono::seconds(1));
    holder_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      check_holder();
      watch_holder();
    });
  }
  void check_holder() {
    try {
      if (const auto n = store_->replace_holder_if_gone()) {
        log("fd store " + store_->path() + ": its holder was gone: a new one keeps the " +
            std::to_string(*n) + " live process(es) again");
        if (!intake_.subscribed()) intake_.serve();
      }
    } catch (const std::exception& e) {
      log("fd store " + store_->path() + ": its holder is gone and no new one starts (" + e.what() +
          "); tried again in 1 s");
    }
  }

  const AgentOptions& opts_;
  AgentConfig config_;
  Engine engine_;
  // The previous agent was killed and cannot finish exiting (a thread of it blocked in the
  // kernel, most likely inside a call's handling): the calls it had received are then failed,
  // not handled again (received_ids.h).
  bool previous_agent_stuck_ = false;
  ControlSocket control_;
  std::optional<FdStoreClient> store_;
  RuntimeIntake intake_;
  asio::signal_set signals_;
  // Bundles being read, off the loop: as long as a handshake may take, a few stuck at most.
  BundleReads bundle_reads_{engine_.io(), std::chrono::milliseconds(opts_.handshake_deadline_ms),
                            kMaxStuckBundleReads};
  // Declared before the containers: each forgets its scope in the judge when it goes.
  std::optional<AgentJudge> judge_;
  std::map<std::string, std::unique_ptr<ServedContainer>> containers_;
  // Each pidfd_getfd group's live containers and their pid namespaces: read from the sessions'
  // threads (the peer check), written on the loop.
  std::mutex groups_mu_;
  std::multimap<std::string, std::pair<std::string, ino_t>> group_members_;
  asio::steady_timer holder_timer_{engine_.io()};
  bool draining_ = false;  // `ctl drain`: no new container or process; stop when none is left
  MetricsRegistry metrics_;
  const double start_time_ =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  uint64_t restarts_ = 0;                        // agents started before this one (since boot)
  std::optional<MetricsServer> metrics_server_;  // --metrics
};

}  // namespace

int run_agent(const AgentOptions& o) {
  // The agent must see every container's processes with host pids: seccomp reports pids in the
  // listener holder's pid namespace, and the BPF observer reports host tids.
  if (!in_initial_pid_namespace())
    throw Error(
        "gdrproxy agent must run in the initial pid namespace (seccomp and the BPF observer "
        "report host pids); run it on the host, not in a container");
  if (o.metrics) static_cast<void>(parse_metrics_address(*o.metrics));  // a bad ADDR said first
  AgentConfig config = o.config ? AgentConfig::load_file(*o.config)
                                : AgentConfig::from_json_text("{\"version\": 1}", "(no --config)");
  if (o.trace_dir) {
    struct stat st;
    if (::stat(o.trace_dir->c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw Error("--trace-dir " + *o.trace_dir + " is not a directory");
  }
  Agent agent(o, std::move(config));
  return agent.run();
}

int agent_ctl(const std::string& ctl_socket, const std::string& command) {
  try {
    const std::string answer =
        ask_unix_socket(ctl_socket, "the agent's control socket", command, 30000);
    std::fwrite(answer.data(), 1, answer.size(), stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gdrproxy agent ctl: %s\n", e.what());
    return 1;
  }
}

}  // namespace gdrproxy::proxy
