#include "proxy/agent/served_container.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include "base/cgroup_v2.h"
#include "base/escape.h"
#include "proxy/engine/kernel_judgement.h"

namespace gdrproxy::proxy {

bool join(ServedContainer& c, const ContainerProcessState& st, Handover& h, const std::string& json,
          const ProfileUntrapped& untrapped, const JoinContext& ctx) {
  const std::string who = process_name(st);
  // `runc exec` enters the container's namespaces: a process elsewhere that names this
  // container is not one of its processes, whatever the message says.
  if (h.pidns != c.pidns || st.state.bundle != c.bundle) {
    ctx.log(who + " refused: it claims container " + c.id + " but " +
            (h.pidns != c.pidns ? "lives in another pid namespace" : "comes from another bundle") +
            " (its trapped calls fail with ENOSYS)");
    return false;
  }
  std::string why;
  if (!untrapped_agrees(untrapped, c.session->kernel_allowed().requests, why)) {
    kill_refused(h.pidfd.get(), who, why, ctx.log);
    return false;
  }
  // The judge judges the container's cgroup and what lies below it: a process elsewhere
  // would run unjudged (`runc exec --cgroup` may name only a cgroup below it).
  if (c.judged.scope && !cgroup_at_or_below(h.cgroup, c.cgroup)) {
    kill_refused(h.pidfd.get(), who,
                 "it runs in cgroup " + printable(h.cgroup) + ", outside its container's " +
                     printable(c.cgroup) + ", where the BPF LSM judge does not judge it",
                 ctx.log);
    return false;
  }
  give_listener(c, h, st, json, ctx);
  ++c.listeners;
  ctx.log(who + " (" + container_status_name(st.state.status) + ") joins its session (" +
          std::to_string(c.listeners) + " listeners)");
  return true;
}

bool join_unnamed(ServedContainer& c, const ContainerProcessState& st, Handover& h,
                  const std::string& json, const ProfileUntrapped& untrapped,
                  const JoinContext& ctx) {
  const std::string who = process_name(st);
  std::string why;
  if (!st.state.bundle.empty() && st.state.bundle != c.bundle)
    why = "it claims container " + c.id + " but comes from another bundle";
  else if (!untrapped_agrees(untrapped, c.session->kernel_allowed().requests, why))
    why += "; it cannot be killed before its first call, its runtime named no process";
  if (!why.empty()) {
    ctx.log(who + " refused: " + why + " (its trapped calls fail with ENOSYS)");
    return false;
  }
  auto ids_copy =
      std::make_shared<UniqueFd>(ctx.store ? ::fcntl(h.ids.fd(), F_DUPFD_CLOEXEC, 0) : -1);
  Session::BindCheck bind = [ctx, id = c.id, pidns = c.pidns, cgroup = c.cgroup,
                             judged = c.judged.scope != nullptr, json,
                             ids_copy](pid_t pid, int listener, uint64_t call) -> std::string {
    UniqueFd pidfd;
    if (std::string refused =
            check_first_caller(pid, listener, call, id, pidns, cgroup, judged, pidfd);
        !refused.empty())
      return refused;
    if (ctx.store && *ids_copy) {
      auto copies = std::make_shared<std::array<UniqueFd, 3>>();
      for (size_t i = 0; const int f : {listener, pidfd.get(), ids_copy->get()})
        (*copies)[i++].reset(::fcntl(f, F_DUPFD_CLOEXEC, 0));
      auto named = nlohmann::json::parse(json);
      named["pid"] = pid;
      boost::asio::post(ctx.io, [ctx, id, copies, state = named.dump()] {
        if ((*copies)[0] && (*copies)[1] && (*copies)[2] &&
            !ctx.store->keep(id, state, std::move(*copies), false))
          ctx.check_holder();
      });
    }
    ctx.log("container " + id + ": the process its runtime did not name is pid " +
            std::to_string(pid) + " (bound at its first call)");
    return "";
  };
  c.session->add_unbound_listener(h.listener.release(), std::move(h.ids), std::move(bind));
  ++c.listeners;
  ctx.log(who + " (" + container_status_name(st.state.status) + ") joins its session (" +
          std::to_string(c.listeners) + " listeners), bound to its first caller");
  return true;
}

void give_listener(ServedContainer& c, Handover& h, const ContainerProcessState& st,
                   const std::string& json, const JoinContext& ctx) {
  std::array<UniqueFd, 3> copies;
  if (ctx.store)
    for (size_t i = 0; const int f : {h.listener.get(), h.pidfd.get(), h.ids.fd()})
      copies[i++].reset(::fcntl(f, F_DUPFD_CLOEXEC, 0));
  c.session->add_listener(h.listener.release(), std::move(h.ids));
  // Put here only for an older holder, which names no entry: once the session has the
  // listener, since such an entry could not be forgotten alone.
  if (copies[0] && copies[1] && copies[2] &&
      !ctx.store->keep(st.state.id, json, std::move(copies), h.in_holder))
    ctx.check_holder();
}

void kill_refused(int pidfd, const std::string& who, const std::string& why, const AgentLog& log) {
  const bool killed = ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0) == 0;
  log(who + " refused: " + why + (killed ? " (killed)" : " (could not be killed: it exited)"));
}

}  // namespace gdrproxy::proxy
