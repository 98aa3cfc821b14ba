#include "proxy/agent/control_socket.h"

#include <sys/socket.h>

#include <cerrno>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/unix_request.h"
#include "proxy/agent/state_socket.h"

namespace gdrproxy::proxy {

namespace {

std::string json_line(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

nlohmann::json listed(const ContainerView& c) {
  nlohmann::json j = {{"id", c.id},
                      {"pid", c.pid},
                      {"pidns", c.pidns},
                      {"cgroup", c.cgroup},
                      {"status", c.status},
                      {"bundle", c.bundle},
                      {"rule", c.rule},
                      {"grants", c.grants},
                      {"listeners", c.listeners},
                      {"draining", c.draining},
                      {"mode", c.mode == Mode::kEnforce ? "enforce" : "trace"}};
  if (c.judged_in_kernel) j["judged_in_kernel"] = *c.judged_in_kernel;
  // Names the pod's creator chose: escaped by the JSON writer, as every string here.
  if (!c.pod.pod_namespace.empty() || !c.pod.pod_name.empty() || !c.pod.pod_id.empty()) {
    nlohmann::json pod = nlohmann::json::object();
    if (!c.pod.pod_namespace.empty()) pod["namespace"] = c.pod.pod_namespace;
    if (!c.pod.pod_name.empty()) pod["name"] = c.pod.pod_name;
    if (!c.pod.pod_id.empty()) pod["id"] = c.pod.pod_id;
    j["pod"] = std::move(pod);
  }
  if (!c.pod.container.empty()) j["container"] = c.pod.container;
  if (!c.pod.kind.empty()) j["kind"] = c.pod.kind;
  return j;
}

// `ctl stats`'s counters, by name.
constexpr std::pair<const char*, uint64_t SessionStats::*> kCounters[] = {
    {"ioctls", &SessionStats::ioctls},
    {"opens", &SessionStats::opens},
    {"brokered", &SessionStats::brokered},
    {"denied", &SessionStats::denied},
    {"handler_faults", &SessionStats::handler_faults},
    {"allowed_unread", &SessionStats::allowed_unread},
    {"trap_copies_used", &SessionStats::trap_copies_used},
    {"trap_copies_missed", &SessionStats::trap_copies_missed},
    {"trap_copies_torn", &SessionStats::trap_copies_torn},
    {"observer_lost", &SessionStats::observer_lost},
    {"observer_skipped", &SessionStats::observer_skipped},
    {"results_unobserved", &SessionStats::results_unobserved},
    {"fds_watched", &SessionStats::fds_watched},
    {"fds_unwatched_gone", &SessionStats::fds_unwatched_gone},
    {"deadline_failures", &SessionStats::deadline_failures}};

nlohmann::json counted(const ContainerView& c) {
  const SessionStats& s = c.stats;
  nlohmann::json j = {{"id", c.id}, {"degraded", s.degraded}, {"stuck", s.stuck}};
  for (const auto& [name, counter] : kCounters) j[name] = s.*counter;
  if (c.judged_in_kernel == "cgroup") j["kernel_refused"] = s.kernel_refused;
  // Where an ioctl's handling time goes (us per ioctl, over the sampled calls).
  const auto us = [&](uint64_t ns) {
    return s.ioctl_phase_samples ? double(ns) / 1e3 / double(s.ioctl_phase_samples) : 0.0;
  };
  j["us_per_ioctl"] = us(s.ns_ioctl);
  j["us_per_open"] = s.opens ? double(s.ns_open) / 1e3 / double(s.opens) : 0.0;
  const SessionStats::IoctlPhases& ph = s.ioctl_ns;
  j["us_per_ioctl_phases"] = {{"lookup", us(ph.lookup)}, {"memory", us(ph.memory)},
                              {"decode", us(ph.decode)}, {"policy", us(ph.policy)},
                              {"answer", us(ph.answer)}, {"trace", us(ph.trace)}};
  j["p50_us"] = double(s.p50_ns) / 1e3;
  j["p99_us"] = double(s.p99_ns) / 1e3;
  return j;
}

}  // namespace

std::string control_answer(const std::string& cmd, ControlVerbs& verbs) {
  if (cmd == "list" || cmd == "stats") {
    std::string out;
    for (const ContainerView& c : verbs.containers(cmd == "stats"))
      out += json_line(cmd == "list" ? listed(c) : counted(c));
    return out;
  }
  if (cmd.rfind("judge-pending ", 0) == 0) return verbs.judge_pending(cmd.substr(14));
  if (cmd == "drain")
    return "{\"draining\":true,\"containers\":" + std::to_string(verbs.drain_all()) + "}\n";
  if (cmd.rfind("drain ", 0) == 0) {
    const std::string id = cmd.substr(6);
    if (!verbs.drain(id)) return json_line({{"error", "no such container"}});
    return json_line({{"draining", true}, {"id", id}});
  }
  return json_line({{"error",
                     "unknown command; expected list, stats, drain, drain ID or judge-pending "
                     "PID ID"}});
}

ControlSocket::ControlSocket(boost::asio::io_context& io, const std::string& path,
                             std::chrono::milliseconds deadline, size_t max_handshakes,
                             AgentLog log, bool* previous_stuck)
    : acceptor_(bind_root_only(io, path, previous_stuck)),
      handshakes_(deadline, max_handshakes),
      log_(std::move(log)) {}

void ControlSocket::serve(ControlVerbs& verbs) {
  accept_each(
      acceptor_, [this, &verbs](LocalSocket s) { on_connection(std::move(s), verbs); },
      [] { return true; }, "a control connection", log_);
}

// One short command line, read asynchronously within the handshake deadline, answered (written
// asynchronously, within the same deadline) and closed. Only root's connections are read.
void ControlSocket::on_connection(LocalSocket s, ControlVerbs& verbs) {
  const auto cred = peer_credentials(s.native_handle());
  if (!cred || cred->uid != 0) return;
  auto cmd = std::make_shared<std::string>();
  handshakes_.add(
      std::move(s),
      [cmd, &verbs](int fd) -> std::optional<std::string> {
        char buf[256];
        for (;;) {
          const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
          if (n < 0 && errno == EINTR) continue;
          if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return std::nullopt;
          if (n < 0) return std::string();
          cmd->append(buf, static_cast<size_t>(n));
          if (n == 0 || cmd->find('\n') != std::string::npos || cmd->size() >= 256) break;
        }
        std::string line = cmd->substr(0, cmd->find('\n'));
        while (!line.empty() && line.back() == ' ') line.pop_back();
        return control_answer(line, verbs);
      },
      [this](const std::string& why) { log_("a control connection " + why); });
}

}  // namespace gdrproxy::proxy
