// A caller's identity from /proc. Every byte here is the tenant's (it names its own threads), so
// nothing is assumed: a missing field leaves its default, a malformed number reads as 0, and the
// name is taken raw from /proc/<tid>/comm (printing escapes it; see proxy/trace/escape.h).
#include "proxy/supervisor/process_info.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace gdrproxy::proxy {
namespace {

// The last number of a whitespace-separated list ("NSpid:\t412\t7" -> 7), 0 if there is none.
uint32_t last_number(const std::string& text) {
  uint32_t last = 0;
  const char* p = text.c_str();
  for (;;) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(p, &end, 10);
    if (end == p) break;
    last = static_cast<uint32_t>(v);
    p = end;
  }
  return last;
}

}  // namespace

ProcessIdentity read_process_identity(pid_t host_tid) {
  ProcessIdentity id;
  id.host_tid = static_cast<uint32_t>(host_tid);
  const std::string base = "/proc/" + std::to_string(host_tid);
  {
    // comm is at most 15 bytes and a newline; any byte but NUL may be in it.
    std::ifstream comm(base + "/comm", std::ios::binary);
    char buf[64];
    comm.read(buf, sizeof buf);
    std::string name(buf, static_cast<size_t>(comm.gcount()));
    if (!name.empty() && name.back() == '\n') name.pop_back();
    id.comm = std::move(name);
  }
  std::ifstream status(base + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Tgid:", 0) == 0) {
      id.host_tgid = last_number(line.substr(5));
    } else if (line.rfind("NStgid:", 0) == 0) {
      // The last entry is the innermost namespace's view.
      id.ns_tgid = last_number(line.substr(7));
    } else if (line.rfind("NSpid:", 0) == 0) {
      id.ns_tid = last_number(line.substr(6));
    }
  }
  struct stat st;
  if (::stat((base + "/ns/pid").c_str(), &st) == 0) id.pidns = st.st_ino;
  return id;
}

}  // namespace gdrproxy::proxy
