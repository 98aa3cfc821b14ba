#include "proxy/gpudirect/dmabuf_check.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <fstream>

namespace gdrproxy::proxy {

DmabufVerdict check_dmabuf_fd(pid_t tid, int fd, const std::vector<std::string>& exporters,
                              const std::string& proc_root) {
  DmabufVerdict v;
  if (fd == -1) {
    v.allowed = true;
    v.reason = "capability probe (fd -1)";
    return v;
  }
  const std::string base = proc_root + "/" + std::to_string(tid);
  char target[PATH_MAX];
  const std::string link = base + "/fd/" + std::to_string(fd);
  ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
  if (n < 0) {
    v.reason = "fd " + std::to_string(fd) + " is not open in the caller";
    return v;
  }
  const std::string what(target, static_cast<size_t>(n));
  if (what.rfind("/dmabuf:", 0) != 0) {
    v.reason = "fd " + std::to_string(fd) + " is not a dma-buf (" + what + ")";
    return v;
  }
  std::ifstream info(base + "/fdinfo/" + std::to_string(fd));
  std::string line;
  while (std::getline(info, line)) {
    if (line.rfind("exp_name:", 0) == 0) {
      const size_t at = line.find_first_not_of(" \t", 9);
      v.exporter = at == std::string::npos ? std::string() : line.substr(at);
      break;
    }
  }
  if (std::find(exporters.begin(), exporters.end(), v.exporter) == exporters.end()) {
    v.reason = "dma-buf fd " + std::to_string(fd) + " was exported by '" +
               (v.exporter.empty() ? "unknown" : v.exporter) + "', not a granted GPU";
    return v;
  }
  v.allowed = true;
  v.reason = "dma-buf exported by " + v.exporter;
  return v;
}

}  // namespace gdrproxy::proxy
