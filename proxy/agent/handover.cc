#include "proxy/agent/handover.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "base/cgroup_v2.h"
#include "base/escape.h"
#include "base/process_info.h"
#include "proxy/agent/listener_check.h"
#include "proxy/engine/seccomp_notify.h"

namespace gdrproxy::proxy {

std::string process_name(const ContainerProcessState& st) {
  return "container " + st.state.id + ": process " + std::to_string(st.pid);
}

bool verified_facts(int pidfd, pid_t pid, ino_t& pidns, std::string& cgroup) {
  pidns = pid_namespace_of(pid);
  cgroup = cgroup_of(pid);
  return pidns != 0 && ::syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) == 0;
}

void let_go(Handover& h, const std::string& id, FdStoreClient* store) {
  h.listener.reset();
  if (!h.in_holder || !store) return;
  if (h.key != 0)
    store->forget(h.key);
  else
    store->forget_container_in_older_holder(id);
}

bool checked_process(const ContainerProcessState& st, Handover& h, std::string& why) {
  if (!is_seccomp_listener(h.listener.get(), why)) {
    why = " refused: " + why;
    return false;
  }
  if (st.pid == 0) return true;
  const pid_t pid = pid_of_pidfd(h.pidfd.get());
  if (pid != st.pid || !verified_facts(h.pidfd.get(), pid, h.pidns, h.cgroup)) {
    why = std::string(h.from_previous_agent ? " exited while no agent ran"
                                            : " exited while it was being checked") +
          ": listener closed";
    return false;
  }
  return true;
}

std::string check_first_caller(pid_t pid, int listener, uint64_t call, const std::string& id,
                               ino_t pidns, const std::string& cgroup, bool kill, UniqueFd& pidfd) {
  const std::string caller = "its first caller, pid " + std::to_string(pid);
  pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  ino_t ns = 0;
  std::string cg;
  if (!pidfd || !notif_id_valid(listener, call) || !verified_facts(pidfd.get(), pid, ns, cg))
    return caller + ", exited before it could be checked";
  std::string refused;
  if (ns != pidns)
    refused = caller + ", lives in another pid namespace than container " + id + "'s";
  else if (!cgroup_at_or_below(cg, cgroup))
    refused = caller + ", runs in cgroup " + printable(cg) + ", outside container " + id + "'s " +
              printable(cgroup);
  if (!refused.empty() && kill &&
      ::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0) == 0)
    refused += " (killed: its profile's untrapped requests would run unjudged)";
  return refused;
}

}  // namespace gdrproxy::proxy
