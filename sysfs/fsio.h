// Small file-system helpers for reading and writing sysfs-shaped trees.
//
// Reads use plain POSIX calls because sysfs attributes are tiny and some of them fail with EINVAL
// on read() even though open() succeeds; callers need to tell "missing" from "unreadable".
// Writes go through a directory fd (openat/symlinkat/mkdirat) so building a tree of a few thousand
// entries does not resolve the same long path again and again.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gdrproxy::sysfs {

// Result of reading one attribute: the bytes, or the errno that stopped us.
struct ReadResult {
  std::optional<std::string> data;
  int error = 0;  // errno when data is empty (ENOENT: no such file)
  // open() succeeded and read() failed: the kernel refuses the value (a down link's speed gives
  // EINVAL, a queue's traffic_class even ENOENT), which is not a missing file.
  bool opened = false;
};

// Reads a whole (small) file, or its first `max` bytes. Never throws.
ReadResult read_file(const std::string& path, size_t max = 1u << 20);
// Reads a file and returns it only if readable.
std::optional<std::string> read_text(const std::string& path);
// Strips one trailing newline and surrounding blanks, the way attribute values are compared.
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

// Hex encoding of binary data (config space) and back; from_hex returns nullopt on bad input.
std::string to_hex(std::string_view bytes);
std::optional<std::string> from_hex(std::string_view hex);

// The relative target the kernel writes for a link placed in directory `from_dir` pointing at
// `target` (both relative to the same root, no leading '/'): climb until a proper ancestor of the
// target is reached, then descend. E.g. from "devices/p/0000:82:00.0/infiniband/mlx4_0" to
// "devices/p/0000:82:00.0" gives "../../../0000:82:00.0", as sysfs shows it.
std::string kernel_relative_link(std::string_view from_dir, std::string_view target);

// Removes a tree (like rm -rf), not following symlinks. Returns false and sets `err` on failure.
bool remove_tree(const std::string& path, std::string* err);

}  // namespace gdrproxy::sysfs
