// A caller's identity from /proc. Every byte here is the tenant's (it names its own threads), so
// nothing is assumed: a missing field leaves its default, a malformed number reads as 0, and the
// name is taken raw from /proc/<tid>/comm (printing escapes it; see base/escape.h).
#include "base/process_info.h"

#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "base/file_io.h"

namespace gdrproxy {
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

ino_t namespace_of(pid_t pid, const char* kind) {
  struct stat st {};
  return ::stat(("/proc/" + std::to_string(pid) + "/ns/" + kind).c_str(), &st) == 0 ? st.st_ino : 0;
}
}  // namespace

ProcessIdentity parse_process_identity(std::string_view status, std::string_view comm) {
  ProcessIdentity id;
  if (!comm.empty() && comm.back() == '\n') comm.remove_suffix(1);
  id.comm = std::string(comm);
  // One line at a time, as std::getline splits them (a last line without newline counts).
  while (!status.empty()) {
    const size_t eol = status.find('\n');
    const std::string line(status.substr(0, eol));
    status.remove_prefix(eol == std::string_view::npos ? status.size() : eol + 1);
    if (line.rfind("Tgid:", 0) == 0) {
      id.host_tgid = last_number(line.substr(5));
    } else if (line.rfind("NStgid:", 0) == 0) {
      // The last entry is the innermost namespace's view.
      id.ns_tgid = last_number(line.substr(7));
    } else if (line.rfind("NSpid:", 0) == 0) {
      id.ns_tid = last_number(line.substr(6));
    }
  }
  return id;
}

ProcessIdentity read_process_identity(pid_t host_tid) {
  const std::string base = "/proc/" + std::to_string(host_tid);
  // comm is at most 15 bytes and a newline; any byte but NUL may be in it.
  const std::string comm = read_text(base + "/comm", 64).value_or("");
  ProcessIdentity id = parse_process_identity(read_text(base + "/status").value_or(""), comm);
  id.host_tid = static_cast<uint32_t>(host_tid);
  struct stat st;
  if (::stat((base + "/ns/pid").c_str(), &st) == 0) id.pidns = st.st_ino;
  return id;
}

uint32_t own_pid_namespace_inode() {
  struct stat st {};
  return ::stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint32_t>(st.st_ino) : 0;
}

ino_t pid_namespace_of(pid_t pid) {
  return namespace_of(pid, "pid");
}
ino_t mount_namespace_of(pid_t pid) {
  return namespace_of(pid, "mnt");
}

std::string cgroup_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  return "";
}

bool killed_but_not_gone(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  std::ifstream in(dir + "/stat");
  std::string stat;
  std::getline(in, stat);
  const auto paren = stat.rfind(')');
  if (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z') return true;
  // SIGKILL (bit 8 of the masks) pending for the main thread or its process.
  std::ifstream status(dir + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("SigPnd:", 0) == 0 || line.rfind("ShdPnd:", 0) == 0)
      if (std::strtoull(line.c_str() + 7, nullptr, 16) & (1ULL << (SIGKILL - 1))) return true;
  return false;
}

bool in_initial_pid_namespace() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("NSpid:", 0) == 0) {
      // One pid: the initial namespace; one more per level of nesting.
      std::istringstream pids(line.substr(6));
      int levels = 0;
      for (std::string p; pids >> p;) ++levels;
      return levels == 1;
    }
  }
  return true;  // a kernel without NSpid has no pid namespaces to be in
}

pid_t pid_of_pidfd(int pidfd) {
  std::ifstream in("/proc/self/fdinfo/" + std::to_string(pidfd));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Pid:", 0) == 0)
      return static_cast<pid_t>(std::strtol(line.c_str() + 4, nullptr, 10));
  return -1;
}

}  // namespace gdrproxy
