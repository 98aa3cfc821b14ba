// See owner_file.h. /proc/<pid>/stat is "pid (comm) state ...": the command name may hold spaces
// and parentheses, so the fields are counted after the last ')'.
#include "base/owner_file.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "base/file_io.h"

namespace gdrproxy {

namespace {

// Field 22 of /proc/<pid>/stat; "" when absent, and for a zombie or a dead task unless asked.
std::string start_time(pid_t pid, bool zombies) {
  if (pid <= 0) return {};
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat").value_or("");
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 > stat.size()) return {};
  std::istringstream fields(stat.substr(paren + 2));
  std::string f;
  for (int i = 3; i <= 22 && (fields >> f); ++i) {
    if (i == 3 && !zombies && (f == "Z" || f == "X")) return {};
    if (i == 22) return f;
  }
  return {};
}

}  // namespace

std::string process_start_time(pid_t pid) {
  return start_time(pid, false);
}

bool owner_present(const OwnerRecord& r) {
  return r.pid > 0 && !r.start.empty() && start_time(r.pid, true) == r.start;
}

std::optional<OwnerRecord> owner_record_of(pid_t pid) {
  std::string start = process_start_time(pid);
  if (start.empty()) return std::nullopt;
  return OwnerRecord{pid, std::move(start)};
}

bool owner_alive(const OwnerRecord& r) {
  return r.pid > 0 && !r.start.empty() && process_start_time(r.pid) == r.start;
}

std::optional<OwnerRecord> read_owner_file(const std::string& path) {
  std::ifstream in(path);
  OwnerRecord r;
  if (!(in >> r.pid >> r.start) || r.pid <= 0) return std::nullopt;
  return r;
}

bool owner_file_alive(const std::string& path) {
  const auto r = read_owner_file(path);
  return r && owner_alive(*r);
}

void write_owner_file(const std::string& path, const OwnerRecord& r) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  std::ofstream out(tmp, std::ios::trunc);
  out << r.pid << " " << r.start << "\n";
  out.close();
  if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw Error("cannot write " + path);
  }
}

}  // namespace gdrproxy
