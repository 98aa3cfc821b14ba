// Finds the driver's libraries and tools on the host (see nvidia_user_files.h).
#include "proxy/oci/nvidia_user_files.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace gdrproxy::proxy {
namespace {

namespace fs = std::filesystem;

// The loader's default directories; the host's /etc/ld.so.conf adds its own (NVIDIA's installer
// and cloud images put the driver in /usr/local/nvidia/lib64 and the like).
constexpr const char* kLibraryDirs[] = {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib",
                                        "/lib/x86_64-linux-gnu",     "/lib64",     "/lib"};
constexpr const char* kToolDirs[] = {"/usr/bin", "/usr/sbin", "/bin"};
// The driver's tools a container uses (the set NVIDIA's container toolkit mounts).
constexpr const char* kTools[] = {"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced",
                                  "nvidia-cuda-mps-control", "nvidia-cuda-mps-server"};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The directories /etc/ld.so.conf under `root` names, its `include` globs followed.
void ld_so_conf_dirs(const std::string& root, const std::string& file, int depth,
                     std::vector<std::string>& out) {
  std::ifstream in(root + file);
  std::string line;
  while (depth < 4 && std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string w;
    if (!(words >> w)) continue;
    if (w == "include") {
      while (words >> w) {
        const std::string pattern = root + (w[0] == '/' ? w : "/etc/" + w);
        glob_t g{};
        if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
          for (size_t i = 0; i < g.gl_pathc; ++i)
            ld_so_conf_dirs(root, std::string(g.gl_pathv[i]).substr(root.size()), depth + 1, out);
        ::globfree(&g);
      }
    } else if (w[0] == '/') {
      out.push_back(w);
    }
  }
}

}  // namespace

std::vector<DriverFileMount> nvidia_user_files(const std::string& root,
                                               const std::string& version) {
  std::map<std::string, std::string> out;  // container path -> host path
  const std::string suffix = ".so." + version;
  std::error_code ec;
  std::vector<std::string> dirs(std::begin(kLibraryDirs), std::end(kLibraryDirs));
  ld_so_conf_dirs(root == "/" ? "" : root, "/etc/ld.so.conf", 0, dirs);
  std::vector<std::string> seen;
  for (const std::string& dir : dirs) {
    if (std::find(seen.begin(), seen.end(), dir) != seen.end()) continue;
    seen.push_back(dir);
    const fs::path d = fs::path(root) / fs::path(dir).relative_path();
    // A directory that is a link to another of the list (/lib -> usr/lib) is walked once.
    if (fs::is_symlink(d, ec)) continue;
    std::map<std::string, std::vector<std::string>> links;  // target file name -> link names
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(d, ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("lib", 0) != 0) continue;
      if (e.is_symlink(ec)) {
        const fs::path target = fs::read_symlink(e.path(), ec);
        if (!ec && ends_with(target.filename().string(), suffix))
          links[target.filename().string()].push_back(name);
      } else if (e.is_regular_file(ec) && ends_with(name, suffix)) {
        files.push_back(name);
      }
    }
    for (const std::string& f : files) {
      const std::string host = (d / f).string();
      out[dir + "/" + f] = host;
      for (const std::string& l : links[f]) out[dir + "/" + l] = host;
    }
  }
  for (const char* tool : kTools)
    for (const char* dir : kToolDirs) {
      const fs::path p = fs::path(root) / fs::path(dir).relative_path() / tool;
      if (fs::is_regular_file(p, ec) && !fs::is_symlink(p, ec)) {
        out[std::string(dir) + "/" + tool] = p.string();
        break;
      }
    }
  std::vector<DriverFileMount> v;
  for (const auto& [c, h] : out) v.push_back({h, c});
  return v;
}

}  // namespace gdrproxy::proxy
