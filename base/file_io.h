// Whole-file reads and small path helpers, the one copy every component uses. The idea not to
// miss: a read never throws and tells "missing" (open failed, ENOENT) from "unreadable" (open
// succeeded, read failed: a sysfs attribute the kernel refuses, a directory), and it is bounded,
// so a runaway or endless file (a tenant's image, a strange procfs) cannot make us read forever.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gdrproxy {

// The bound of a read that names none: attributes, /proc files and configs are far smaller.
inline constexpr size_t kSmallFileMax = size_t{1} << 20;
// No bound: for files that may legitimately grow large (a log, a busy host's mountinfo).
inline constexpr size_t kWholeFile = SIZE_MAX;

// Result of reading one file: the bytes, or the errno that stopped us.
struct ReadResult {
  std::optional<std::string> data;
  int error = 0;  // errno when data is empty (ENOENT: no such file)
  // open() succeeded and read() failed: the kernel refuses the value (a down link's speed gives
  // EINVAL, a queue's traffic_class even ENOENT), which is not a missing file.
  bool opened = false;
};

// Reads a whole file, or its first `max` bytes. Never throws.
ReadResult read_file(const std::string& path, size_t max = kSmallFileMax);
// The file's bytes (its first `max`), or nullopt when it cannot be opened or read.
std::optional<std::string> read_text(const std::string& path, size_t max = kSmallFileMax);

// Strips surrounding blanks (and the trailing newline), the way a file's value is compared.
std::string trim(std::string_view s);
// readlink(2) as a string; nullopt if not a symlink or unreadable.
std::optional<std::string> read_link(const std::string& path);
// Names in a directory (no "." / ".."), sorted; empty if not a directory.
std::vector<std::string> list_dir(const std::string& path);
bool is_dir(const std::string& path);      // follows symlinks
bool is_symlink(const std::string& path);  // does not follow
bool exists_nofollow(const std::string& path);
// realpath(3); nullopt when any component is missing (dangling link).
std::optional<std::string> real_path(const std::string& path);
std::string basename_of(std::string_view path);
std::string dirname_of(std::string_view path);
// Joins with exactly one '/' between parts.
std::string join(std::string_view a, std::string_view b);

// Removes a tree (like rm -rf), not following symlinks. Returns false and sets `err` on failure.
bool remove_tree(const std::string& path, std::string* err);

}  // namespace gdrproxy
