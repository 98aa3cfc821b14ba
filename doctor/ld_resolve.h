// ld.so's library search, modelled inside an image's root file system: DT_RPATH (when the object
// has no DT_RUNPATH, including its loaders' DT_RPATH), DT_RUNPATH, /etc/ld.so.conf and its
// includes, then the default directories; $ORIGIN expanded; a candidate of the wrong ELF class or
// machine skipped, as ld.so skips it. LD_LIBRARY_PATH is the job's, not the image's: not modelled.
//
// The idea not to miss: every path is resolved inside the image. An absolute symlink in the image
// points into the image, ".." stops at its root, and nothing outside it is ever opened, however
// the tenant's image lays out its links.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "doctor/elf_dynamic.h"

namespace gdrproxy::doctor {

class Rootfs {
 public:
  explicit Rootfs(std::string root);
  // The image path of what `image_path` names after following symlinks inside the image;
  // nullopt if a component is missing or links loop.
  std::optional<std::string> resolve(const std::string& image_path) const;
  // The host path of an image path (no symlink resolution).
  std::string host(const std::string& image_path) const { return root_ + image_path; }
  // Directories of /etc/ld.so.conf, with include globs expanded, in order.
  std::vector<std::string> ld_so_conf_dirs() const;
  // Parses the ELF file at an image path (symlinks resolved inside the image).
  std::optional<ElfDynamic> read_elf(const std::string& image_path, std::string* error) const;

 private:
  void read_conf(const std::string& image_path, int depth, std::vector<std::string>& out) const;
  std::string root_;
};

struct Resolved {
  std::string needed;
  std::string path;  // image path where it was found (as searched, before symlinks); "" if not
  std::string real;  // that path with symlinks resolved inside the image
  std::string via;   // "RPATH", "RUNPATH", "ld.so.conf", "default", "path"
};

// Searches `needed` for `loader` (at image path `loader_path`); `inherited_rpath` is the DT_RPATH
// of the objects that loaded `loader` ($ORIGIN already expanded).
Resolved resolve_needed(const Rootfs& fs, const std::string& needed, const std::string& loader_path,
                        const ElfDynamic& loader, const std::vector<std::string>& inherited_rpath);

// $ORIGIN / ${ORIGIN} replaced by the directory of `object_path`.
std::string expand_origin(const std::string& entry, const std::string& object_path);

}  // namespace gdrproxy::doctor
