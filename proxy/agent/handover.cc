#include "proxy/agent/handover.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "base/process_info.h"

namespace gdrproxy::proxy {

std::string process_name(const ContainerProcessState& st) {
  return "container " + st.state.id + ": process " + std::to_string(st.pid);
}

bool verified_facts(int pidfd, pid_t pid, ino_t& pidns, std::string& cgroup) {
  pidns = pid_namespace_of(pid);
  cgroup = cgroup_of(pid);
  return pidns != 0 && ::syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) == 0;
}

pid_t pid_of_pidfd(int pidfd) {
  std::ifstream in("/proc/self/fdinfo/" + std::to_string(pidfd));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Pid:", 0) == 0)
      return static_cast<pid_t>(std::strtol(line.c_str() + 4, nullptr, 10));
  return -1;
}

}  // namespace gdrproxy::proxy
