#include "proxy/supervisor/process_info.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>

namespace gdrproxy::proxy {

ProcessIdentity read_process_identity(pid_t host_tid) {
  ProcessIdentity id;
  id.host_tid = static_cast<uint32_t>(host_tid);
  const std::string base = "/proc/" + std::to_string(host_tid);
  std::ifstream status(base + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Name:", 0) == 0) {
      id.comm = line.substr(line.find_first_not_of(" \t", 5));
    } else if (line.rfind("Tgid:", 0) == 0) {
      id.host_tgid = static_cast<uint32_t>(std::stoul(line.substr(5)));
    } else if (line.rfind("NStgid:", 0) == 0) {
      std::istringstream ss(line.substr(7));
      uint32_t v;
      while (ss >> v) id.ns_tgid = v;
    } else if (line.rfind("NSpid:", 0) == 0) {
      // The last entry is the innermost namespace's view.
      std::istringstream ss(line.substr(6));
      uint32_t v;
      while (ss >> v) id.ns_tid = v;
    }
  }
  struct stat st;
  if (::stat((base + "/ns/pid").c_str(), &st) == 0) id.pidns = st.st_ino;
  return id;
}

}  // namespace gdrproxy::proxy
