// Image checks (see image.h).
#include "doctor/image.h"

#include <filesystem>
#include <map>
#include <set>

#include "base/file_io.h"
#include "doctor/image_versions.h"
#include "doctor/ld_resolve.h"
#include "doctor/libraries.h"

namespace gdrproxy::doctor {
namespace {
namespace fs = std::filesystem;

constexpr size_t kMaxWalk = 500000;  // entries looked at in an image
constexpr size_t kMaxClosure = 256;  // objects followed from one plugin

bool tracked(const std::string& base) {
  return base == "libucp" || base == "libuct" || base == "libucs" || base == "libucm" ||
         base == "libfabric";
}

// Libraries injected into a container by the NVIDIA runtime, not shipped in an image.
bool injected(const std::string& needed) {
  return needed.rfind("libcuda.so", 0) == 0 || needed.rfind("libnvidia-", 0) == 0;
}

bool under(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/';
}

std::string joined(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

struct Walk {
  std::vector<std::string> plugins;                     // image paths
  std::map<std::string, std::set<std::string>> copies;  // soname file name -> real paths
  bool truncated = false;
};

Walk walk(const Rootfs& rootfs, const std::string& root) {
  Walk w;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  size_t n = 0;
  for (; !ec && it != end; it.increment(ec)) {
    if (++n > kMaxWalk) {
      w.truncated = true;
      break;
    }
    const std::string host = it->path().string();
    // Image paths are host paths without the root ("/" as the root strips nothing).
    const std::string image = root == "/" ? host : host.substr(root.size());
    if (it.depth() == 0 && (image == "/proc" || image == "/sys" || image == "/dev")) {
      it.disable_recursion_pending();
      continue;
    }
    std::error_code e2;
    if (it->is_directory(e2) && it->is_symlink(e2)) it.disable_recursion_pending();
    const std::string name = it->path().filename().string();
    auto k = classify_library(name);
    if (!k) continue;
    if (k->family == "NIXL plugin" && name.rfind("libplugin_", 0) == 0 && !it->is_symlink(e2) &&
        it->is_regular_file(e2))
      w.plugins.push_back(image);
    if (tracked(k->base))
      if (auto real = rootfs.resolve(image)) w.copies[name].insert(*real);
  }
  std::sort(w.plugins.begin(), w.plugins.end());
  return w;
}

void check_plugin(const Rootfs& rootfs, const Walk& w, const std::string& plugin, Report& report,
                  nlohmann::json& facts) {
  const std::string id = "image." + basename_of(plugin);
  std::string err;
  auto elf = rootfs.read_elf(plugin, &err);
  if (!elf) {
    report.fail(id + ".elf", plugin + ": " + err, "rebuild or reinstall the plugin");
    return;
  }
  // Breadth-first over the plugin's dependency closure.
  struct Item {
    std::string path;
    ElfDynamic elf;
    std::vector<std::string> rpath;  // inherited DT_RPATH, $ORIGIN expanded
  };
  std::vector<Item> queue{{plugin, *elf, {}}};
  std::set<std::string> seen{*rootfs.resolve(plugin)};
  std::vector<std::string> missing, resolved_lines, prefix_problems;
  std::map<std::string, std::set<std::string>> ucx_dirs;  // suffix -> dirs of libucp/uct/ucs/ucm
  nlohmann::json pj = nlohmann::json::object();
  std::set<std::string> reported;
  for (size_t i = 0; i < queue.size() && queue.size() < kMaxClosure; ++i) {
    const Item item = queue[i];
    std::vector<std::string> next_rpath = item.rpath;
    if (item.elf.runpath.empty())
      for (const auto& r : item.elf.rpath) next_rpath.push_back(expand_origin(r, item.path));
    for (const auto& needed : item.elf.needed) {
      Resolved r = resolve_needed(rootfs, needed, item.path, item.elf, item.rpath);
      auto k = classify_library(needed);
      if (r.path.empty()) {
        if (!injected(needed)) missing.push_back(needed + " (needed by " + item.path + ")");
        continue;
      }
      if (!reported.insert(needed).second && !(k && tracked(k->base))) continue;
      if (i == 0) {
        resolved_lines.push_back(needed + " -> " + r.real + " (" + r.via + ")");
        pj[clean(needed)] = clean(r.real);
      }
      if (k && tracked(k->base)) {
        if (k->base != "libfabric") ucx_dirs[k->suffix].insert(dirname_of(r.real));
        // The prefix the object was built against: its own RUNPATH/RPATH directories.
        std::vector<std::string> meant;
        for (const auto& d : item.elf.runpath.empty() ? item.elf.rpath : item.elf.runpath)
          if (d.find("ORIGIN") == std::string::npos) meant.push_back(d);
        bool inside = meant.empty();
        for (const auto& d : meant) {
          auto real_dir = rootfs.resolve(d);
          inside = inside || under(r.real, real_dir.value_or(d)) || under(r.path, d);
        }
        if (!inside)
          prefix_problems.push_back(basename_of(item.path) + " was built against " +
                                    joined(meant, ":") + " but " + needed + " resolves to " +
                                    r.real + " (" + r.via + ")");
        auto copies = w.copies.find(needed);
        if (inside && copies != w.copies.end() && copies->second.size() > 1 && i == 0) {
          std::vector<std::string> others;
          for (const auto& c : copies->second)
            if (c != r.real) others.push_back(c);
          report.warn(id + "." + needed,
                      needed + " -> " + r.real + " (" + r.via +
                          "); other copies in the image: " + joined(others, ", "),
                      "remove the copies NIXL was not built against (e.g. the base image's UCX)");
        }
      }
      if (auto real = rootfs.resolve(r.path); real && seen.insert(*real).second) {
        auto child = rootfs.read_elf(*real, nullptr);
        if (child) queue.push_back({r.path, *child, next_rpath});
      }
    }
  }
  facts[clean(plugin)] = pj;
  if (!missing.empty())
    report.fail(id + ".needed", "unresolved in the image: " + joined(missing, "; "),
                "install the missing libraries or add their directory to /etc/ld.so.conf.d");
  else
    report.pass(id + ".needed", resolved_lines.empty()
                                    ? plugin + " needs nothing"
                                    : plugin + ": " + joined(resolved_lines, ", "));
  if (!prefix_problems.empty())
    report.fail(id + ".prefix", joined(prefix_problems, "; "),
                "install the library under the prefix NIXL was built with, or rebuild NIXL "
                "against the installed one (NIXL's meson -Dlibfabric_path/-Ducx_path)");
  for (const auto& [suffix, dirs] : ucx_dirs)
    if (dirs.size() > 1)
      report.fail(id + ".ucx_mixed",
                  "UCX" + (suffix.empty() ? std::string() : " -" + suffix) +
                      " libraries resolve from several directories: " +
                      joined(std::vector<std::string>(dirs.begin(), dirs.end()), ", "),
                  "install one UCX: remove the base image's copy before building UCX");
}

}  // namespace

void check_image(const Context& ctx, Report& report) {
  if (ctx.rootfs.empty()) return;  // --rootfs not given: no image to look at
  if (!is_dir(ctx.rootfs)) {
    report.fail("image.rootfs", quote_value(ctx.rootfs) + " is not a directory",
                "pass the unpacked root file system of the image");
    return;
  }
  Rootfs rootfs(ctx.rootfs);
  const std::string root = real_path(ctx.rootfs).value_or(ctx.rootfs);
  Walk w = walk(rootfs, root);
  if (w.truncated)
    report.warn("image.walk", "stopped after " + std::to_string(kMaxWalk) + " entries",
                "pass a smaller tree");
  nlohmann::json facts = nlohmann::json::object();
  if (w.plugins.empty()) {
    report.warn("image.nixl", "no NIXL plugin (libplugin_*.so) in " + quote_value(ctx.rootfs),
                "install NIXL in the image, or this is not a NIXL image");
  } else {
    for (const auto& p : w.plugins) check_plugin(rootfs, w, p, report, facts);
  }
  report.facts()["image"] = facts;
  check_image_versions(rootfs, report);
}

}  // namespace gdrproxy::doctor
