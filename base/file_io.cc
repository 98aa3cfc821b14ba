// Whole-file reads through plain POSIX calls and the small path helpers; see file_io.h.
#include "base/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>

#include "base/unique_fd.h"

namespace gdrproxy {

ReadResult read_file(const std::string& path, size_t max) {
  ReadResult r;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    r.error = errno;
    return r;
  }
  std::string out;
  char buf[4096];
  while (out.size() < max) {
    ssize_t n = ::read(fd.get(), buf, std::min(sizeof buf, max - out.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      r.error = errno;
      r.opened = true;
      return r;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  r.data = std::move(out);
  return r;
}

std::optional<std::string> read_text(const std::string& path, size_t max) {
  return read_file(path, max).data;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\n')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\n')) --e;
  return std::string(s.substr(b, e - b));
}

std::optional<std::string> read_link(const std::string& path) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  if (n < 0) return std::nullopt;
  return std::string(buf, static_cast<size_t>(n));
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> names;
  DIR* d = ::opendir(path.c_str());
  if (!d) return names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool is_dir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_symlink(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

bool exists_nofollow(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::optional<std::string> real_path(const std::string& path) {
  char* p = ::realpath(path.c_str(), nullptr);
  if (!p) return std::nullopt;
  std::string s(p);
  std::free(p);
  return s;
}

std::string basename_of(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  auto pos = path.rfind('/');
  return std::string(pos == std::string_view::npos ? path : path.substr(pos + 1));
}

std::string dirname_of(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  auto pos = path.rfind('/');
  if (pos == std::string_view::npos) return "";
  if (pos == 0) return "/";
  return std::string(path.substr(0, pos));
}

std::string join(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  std::string out(a);
  if (out.back() != '/') out.push_back('/');
  while (!b.empty() && b.front() == '/') b.remove_prefix(1);
  out.append(b);
  return out;
}

bool remove_tree(const std::string& path, std::string* err) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) {
    if (err) *err = "cannot remove " + path + ": " + ec.message();
    return false;
  }
  return true;
}

}  // namespace gdrproxy
