// ld.so's search inside an image (see ld_resolve.h).
#include "doctor/ld_resolve.h"

#include <elf.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

#include "base/file_io.h"

namespace gdrproxy::doctor {
namespace {

constexpr int kMaxLinks = 40;

std::vector<std::string> components(const std::string& p) {
  std::vector<std::string> out;
  std::istringstream in(p);
  std::string c;
  while (std::getline(in, c, '/'))
    if (!c.empty() && c != ".") out.push_back(c);
  return out;
}

std::vector<std::string> default_dirs(uint16_t machine, bool is64) {
  std::vector<std::string> out;
  if (machine == EM_X86_64) out = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"};
  if (machine == EM_AARCH64) out = {"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu"};
  if (is64) {
    out.push_back("/lib64");
    out.push_back("/usr/lib64");
  }
  out.push_back("/lib");
  out.push_back("/usr/lib");
  return out;
}

}  // namespace

Rootfs::Rootfs(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  if (root_ == "/") root_.clear();
}

std::optional<std::string> Rootfs::resolve(const std::string& image_path) const {
  std::vector<std::string> todo = components(image_path);
  std::vector<std::string> done;
  int links = 0;
  size_t i = 0;
  while (i < todo.size()) {
    const std::string c = todo[i++];
    if (c == "..") {
      if (!done.empty()) done.pop_back();
      continue;
    }
    std::string cur;
    for (const auto& d : done) cur += "/" + d;
    cur += "/" + c;
    struct stat st {};
    if (::lstat((root_ + cur).c_str(), &st) != 0) return std::nullopt;
    if (!S_ISLNK(st.st_mode)) {
      done.push_back(c);
      continue;
    }
    if (++links > kMaxLinks) return std::nullopt;
    auto target = read_link(root_ + cur);
    if (!target) return std::nullopt;
    std::vector<std::string> rest(todo.begin() + static_cast<long>(i), todo.end());
    todo = components(*target);
    todo.insert(todo.end(), rest.begin(), rest.end());
    i = 0;
    if (!target->empty() && (*target)[0] == '/') done.clear();
  }
  std::string out;
  for (const auto& d : done) out += "/" + d;
  return out.empty() ? "/" : out;
}

void Rootfs::read_conf(const std::string& image_path, int depth,
                       std::vector<std::string>& out) const {
  if (depth > 8) return;
  auto real = resolve(image_path);
  if (!real) return;
  auto text = read_text(root_ + *real);
  if (!text) return;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    line = trim(line);
    if (line.empty()) continue;
    if (line.rfind("include", 0) == 0 && line.size() > 7 && (line[7] == ' ' || line[7] == '\t')) {
      std::string pattern = trim(line.substr(8));
      if (pattern.empty()) continue;
      if (pattern[0] != '/') pattern = dirname_of(image_path) + "/" + pattern;
      // Globs are matched against the image's own tree (a directory link inside the image
      // pointing elsewhere in it is followed by resolve(), not by glob()).
      auto dir = resolve(dirname_of(pattern));
      if (!dir) continue;
      glob_t g{};
      const std::string host_pattern =
          root_ + (*dir == "/" ? "" : *dir) + "/" + basename_of(pattern);
      if (::glob(host_pattern.c_str(), 0, nullptr, &g) == 0) {
        for (size_t k = 0; k < g.gl_pathc; ++k) {
          std::string p = g.gl_pathv[k];
          read_conf(p.substr(root_.size()), depth + 1, out);
        }
      }
      ::globfree(&g);
      continue;
    }
    if (line.rfind("hwcap", 0) == 0) continue;
    if (line[0] == '/') out.push_back(line);
  }
}

std::vector<std::string> Rootfs::ld_so_conf_dirs() const {
  std::vector<std::string> out;
  read_conf("/etc/ld.so.conf", 0, out);
  return out;
}

std::optional<ElfDynamic> Rootfs::read_elf(const std::string& image_path,
                                           std::string* error) const {
  auto real = resolve(image_path);
  if (!real) {
    if (error) *error = "no such file in the image";
    return std::nullopt;
  }
  return read_elf_dynamic(root_ + *real, error);
}

std::string expand_origin(const std::string& entry, const std::string& object_path) {
  const std::string origin = dirname_of(object_path);
  std::string out = entry;
  for (const std::string token : {"${ORIGIN}", "$ORIGIN"}) {
    for (size_t at = out.find(token); at != std::string::npos; at = out.find(token, at)) {
      out.replace(at, token.size(), origin);
      at += origin.size();
    }
  }
  return out;
}

Resolved resolve_needed(const Rootfs& fs, const std::string& needed, const std::string& loader_path,
                        const ElfDynamic& loader, const std::vector<std::string>& inherited_rpath) {
  Resolved r;
  r.needed = needed;
  auto accept = [&](const std::string& path, const char* via) {
    auto real = fs.resolve(path);
    if (!real) return false;
    auto elf = fs.read_elf(*real, nullptr);
    if (!elf || elf->is64 != loader.is64 || elf->machine != loader.machine) return false;
    r.path = path;
    r.real = *real;
    r.via = via;
    return true;
  };
  if (needed.find('/') != std::string::npos) {
    accept(needed[0] == '/' ? needed : dirname_of(loader_path) + "/" + needed, "path");
    return r;
  }
  auto search = [&](const std::vector<std::string>& dirs, const char* via) {
    for (const auto& d : dirs) {
      const std::string dir = expand_origin(d, loader_path);
      if (dir.empty() || dir[0] != '/') continue;  // relative entries: relative to the cwd
      if (accept(dir + "/" + needed, via)) return true;
    }
    return false;
  };
  if (loader.runpath.empty()) {
    if (search(loader.rpath, "RPATH")) return r;
    if (search(inherited_rpath, "RPATH")) return r;
  }
  if (search(loader.runpath, "RUNPATH")) return r;
  if (search(fs.ld_so_conf_dirs(), "ld.so.conf")) return r;
  search(default_dirs(loader.machine, loader.is64), "default");
  return r;
}

}  // namespace gdrproxy::doctor
