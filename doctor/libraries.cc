// Library binding of live processes (see libraries.h).
#include "doctor/libraries.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "base/file_io.h"
#include "doctor/elf_dynamic.h"
#include "doctor/ld_resolve.h"
#include "doctor/probe.h"

namespace gdrproxy::doctor {
namespace {

std::string stem_of(const std::string& name) {
  for (size_t at = name.find(".so"); at != std::string::npos; at = name.find(".so", at + 1)) {
    const size_t after = at + 3;
    if (after == name.size() || name[after] == '.') return name.substr(0, at);
  }
  return "";
}

bool starts(const std::string& s, const std::string& p) {
  return s.compare(0, p.size(), p) == 0;
}

// UCX's libraries, optionally with a private SONAME suffix ("-nixl").
const char* const kUcxBases[] = {"libucp", "libuct", "libucs", "libucm"};

std::string joined(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

}  // namespace

std::vector<MappedFile> parse_maps(const std::string& text) {
  std::vector<MappedFile> out;
  std::set<std::string> seen;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // addr perms offset dev inode [path]; the path starts after the inode's padding.
    std::istringstream fields(line);
    std::string addr, perms, offset, dev, inode;
    if (!(fields >> addr >> perms >> offset >> dev >> inode)) continue;
    std::string path;
    std::getline(fields, path);
    path.erase(0, path.find_first_not_of(' '));
    if (path.empty() || path[0] != '/') continue;  // [heap], [vdso], anonymous
    MappedFile m;
    const std::string del = " (deleted)";
    if (path.size() > del.size() && path.compare(path.size() - del.size(), del.size(), del) == 0) {
      path.erase(path.size() - del.size());
      m.deleted = true;
    }
    m.path = path;
    m.identity = dev + ":" + inode;
    if (seen.insert(m.identity + " " + m.path).second) out.push_back(m);
  }
  return out;
}

std::optional<LibraryKind> classify_library(const std::string& path) {
  const std::string name = basename_of(path);
  const std::string stem = stem_of(name);
  if (stem.empty()) return std::nullopt;
  LibraryKind k{"", stem, stem, ""};
  if (stem == "libibverbs" || stem == "librdmacm" || stem == "libnccl" || stem == "libfabric" ||
      stem == "libcuda" || stem == "libnixl") {
    k.family = stem;
    return k;
  }
  if (size_t at = stem.find("-rdmav"); starts(stem, "lib") && at != std::string::npos) {
    k.family = "verbs provider";  // libmlx5-rdmav34.so under libibverbs/
    return k;
  }
  if (stem == "libmlx5" || stem == "libmlx4" || stem == "libefa") {
    k.family = "verbs provider";  // the direct-verbs libraries
    return k;
  }
  if (starts(stem, "libnccl-net")) {
    k.family = "NCCL net plugin";
    return k;
  }
  if (starts(stem, "libplugin_") || starts(stem, "libnixl")) {
    k.family = "NIXL plugin";
    return k;
  }
  for (const char* base : kUcxBases) {
    const std::string b = base;
    if (stem == b) {
      k.family = b;
      return k;
    }
    if (starts(stem, b + "-") && stem.size() > b.size() + 1) {
      k.family = b;
      k.base = b;
      k.suffix = stem.substr(b.size() + 1);
      return k;
    }
    if (starts(stem, b + "_")) {
      k.family = "UCX module";  // lib/ucx/libuct_ib.so, libucx_perftest_cuda, ...
      return k;
    }
  }
  if (starts(stem, "libucx_")) {
    k.family = "UCX module";
    return k;
  }
  return std::nullopt;
}

namespace {

// The analysis of one process's maps: `who` names it in the report ("pid 4242", "the probe
// (pid 77)"), `root` is the directory its paths are resolved in, `env` its environment.
void analyse(const std::string& id, const std::string& who, const std::string& maps_text,
             const std::map<std::string, std::string>& env, const std::string& root, Report& report,
             nlohmann::json& libs) {
  // stem -> distinct files; family -> files for the summary line.
  std::map<std::string, std::vector<MappedFile>> by_stem;
  std::map<std::string, LibraryKind> kinds;
  std::vector<std::string> summary;
  for (const auto& m : parse_maps(maps_text)) {
    auto k = classify_library(m.path);
    if (!k) continue;
    auto& files = by_stem[k->stem];
    if (std::none_of(files.begin(), files.end(),
                     [&](const MappedFile& f) { return f.identity == m.identity; }))
      files.push_back(m);
    kinds[k->stem] = *k;
    summary.push_back(k->stem + "=" + m.path + (m.deleted ? " (deleted)" : ""));
    libs[clean(k->stem)].push_back(clean(basename_of(m.path)));
  }
  if (summary.empty()) {
    report.warn(id + ".mapped", "no RDMA/NCCL/UCX/libfabric/CUDA/NIXL library mapped in " + who,
                "pass the pid of a rank after it initialised its communicator");
    return;
  }
  report.pass(id + ".mapped", who + ": " + joined(summary, ", "));

  std::vector<std::string> dups;
  for (const auto& [stem, files] : by_stem) {
    if (files.size() < 2) continue;
    std::vector<std::string> paths;
    for (const auto& f : files) paths.push_back(f.path);
    dups.push_back(stem + " from " + joined(paths, " and "));
  }
  if (!dups.empty())
    report.fail(id + ".duplicates", "two copies in one process: " + joined(dups, "; "),
                "keep one copy: remove the other from LD_LIBRARY_PATH/LD_PRELOAD or the image, "
                "or build one with a private SONAME suffix");
  else
    report.pass(id + ".duplicates", "one copy of every tracked library");

  // A private-SONAME UCX beside the global one: fine only if NIXL's UCX plugin links it.
  std::set<std::string> suffixes;
  bool global_ucp = false;
  for (const auto& [stem, k] : kinds) {
    if (k.base != "libucp") continue;
    if (k.suffix.empty())
      global_ucp = true;
    else
      suffixes.insert(k.suffix);
  }
  std::vector<std::string> plugins;
  for (const auto& [stem, files] : by_stem)
    if (starts(stem, "libplugin_UCX"))
      for (const auto& f : files) plugins.push_back(f.path);
  if (!suffixes.empty() && global_ucp) {
    std::vector<std::string> bad, good;
    for (const auto& p : plugins) {
      std::string err;
      // The path is the process's: resolved inside its root, so that its symlinks cannot
      // point the doctor at the host's files.
      auto elf = Rootfs(root).read_elf(p, &err);
      if (!elf) {
        bad.push_back(p + " unreadable (" + err + ")");
        continue;
      }
      bool priv = false, glob = false;
      for (const auto& n : elf->needed) {
        auto k = classify_library(n);
        if (!k || k->base != "libucp") continue;
        (k->suffix.empty() ? glob : priv) = true;
      }
      if (priv && !glob)
        good.push_back(p + " links " + joined(elf->needed, ","));
      else
        bad.push_back(p + " links the global libucp");
    }
    if (plugins.empty())
      report.warn(id + ".ucx_private",
                  "private UCX (libucp-" + *suffixes.begin() +
                      ") beside the global libucp, and no NIXL UCX plugin mapped to tell which "
                      "one NIXL binds",
                  "set NIXL_UCX_EXPECTED_SONAME=libucp-" + *suffixes.begin() +
                      " so NIXL refuses the wrong one");
    else if (!bad.empty())
      report.fail(id + ".ucx_private",
                  "private and global UCX both mapped, but " + joined(bad, "; "),
                  "rebuild NIXL against the private-SONAME UCX (contrib/build-container.sh "
                  "--private-ucx)");
    else
      report.pass(id + ".ucx_private",
                  "private UCX beside the global one, bound by NIXL: " + joined(good, "; "));
  }

  if (auto it = env.find("NIXL_UCX_EXPECTED_SONAME"); it != env.end()) {
    std::vector<std::string> ucp;
    bool hit = false;
    for (const auto& [stem, files] : by_stem)
      if (kinds[stem].base == "libucp")
        for (const auto& f : files) {
          ucp.push_back(f.path);
          hit = hit || f.path.find(it->second) != std::string::npos;
        }
    if (hit)
      report.pass(id + ".nixl_expected_soname",
                  "NIXL_UCX_EXPECTED_SONAME=" + quote_value(it->second) + " is mapped");
    else
      report.fail(id + ".nixl_expected_soname",
                  "NIXL_UCX_EXPECTED_SONAME=" + quote_value(it->second) +
                      " but libucp mapped from: " + (ucp.empty() ? "nothing" : joined(ucp, ", ")),
                  "install the expected UCX in the image or correct the variable");
  }
  if (auto it = env.find("LD_PRELOAD");
      it != env.end() && it->second.find("libucp") != std::string::npos && !plugins.empty()) {
    auto deep = env.find("NIXL_UCX_DEEPBIND");
    const bool deepbind = deep != env.end() && deep->second != "0" && deep->second != "false";
    if (!deepbind)
      report.warn(id + ".ucx_preload",
                  "LD_PRELOAD=" + quote_value(it->second) +
                      " preloads a global UCX that captures NIXL's UCX references",
                  "set NIXL_UCX_DEEPBIND=1 with a private-SONAME UCX, or drop the preload");
  }
}

void check_pid(const Context& ctx, int pid, Report& report, nlohmann::json& facts) {
  const std::string id = "lib." + std::to_string(pid);
  const std::string dir = ctx.proc_root + "/" + std::to_string(pid);
  auto maps = read_file(dir + "/maps", 16u << 20);
  if (!maps.data) {
    report.fail(id + ".maps",
                "cannot read " + dir + "/maps: " + std::string(std::strerror(maps.error)),
                "run the doctor as root, in the job's pid namespace, while the process lives");
    return;
  }
  std::map<std::string, std::string> env;
  if (auto e = read_file(dir + "/environ"); e.data) env = parse_environ(*e.data);
  nlohmann::json libs = nlohmann::json::object();
  analyse(id, "pid " + std::to_string(pid), *maps.data, env, dir + "/root", report, libs);
  facts[std::to_string(pid)] = libs;
}

// No --pid: a probe child loads what a job would and its maps are analysed like a rank's.
void check_probe(const Context& ctx, Report& report) {
  std::string names;
  for (const auto& l : ctx.probe_libraries) names += (names.empty() ? "" : ", ") + l;
  const ProbeResult r = run_probe(ctx.probe_libraries, ctx.probe_timeout, ctx.self_proc_root);
  if (r.pid < 0) {
    report.warn("lib.probe", "could not start the probe: " + r.error,
                "pass --pid PID of a rank instead");
    return;
  }
  const std::string who = "probe (pid " + std::to_string(r.pid) +
                          ", a child of the doctor that dlopen()ed " + names +
                          " with the doctor's environment; not a live rank)";
  if (!r.error.empty())
    report.fail("lib.probe.time", r.error + ": a library's constructor crashed the process",
                "run the job's binary under gdb, or check that library's installation");
  else if (r.timed_out)
    report.warn("lib.probe.time",
                "the probe did not finish within " + std::to_string(ctx.probe_timeout.count()) +
                    " ms" + (r.stuck.empty() ? "" : ": dlopen(" + r.stuck + ") had not returned") +
                    "; killed",
                "a library that hangs when loaded hangs the job too: check its device and driver "
                "(the rest of this report is from what was mapped by then)");
  const std::string absent =
      r.absent.empty() ? std::string() : "; not loadable here: " + joined(r.absent, "; ");
  if (r.loaded.empty())
    report.warn("lib.probe.dlopen", "the probe loaded none of " + names + absent,
                "install the job's libraries (or run the doctor in its container), or pass --pid");
  else
    report.pass("lib.probe.dlopen", "the probe loaded " + joined(r.loaded, ", ") + absent);
  nlohmann::json libs = nlohmann::json::object();
  analyse("lib.probe", who, r.maps, ctx.env, "/", report, libs);
  report.facts()["libraries"] = nlohmann::json{{"probe", libs}};
}

}  // namespace

void check_libraries(const Context& ctx, Report& report) {
  if (ctx.pids.empty() && !ctx.probe_libraries.empty()) {
    check_probe(ctx, report);
    return;
  }
  if (ctx.pids.empty()) {
    report.warn("lib.pid",
                "no --pid: the libraries a job binds live in its own processes, not in the "
                "doctor's",
                "pass --pid PID of a rank (repeat for several)");
    return;
  }
  nlohmann::json facts = nlohmann::json::object();
  for (int pid : ctx.pids) check_pid(ctx, pid, report, facts);
  report.facts()["libraries"] = facts;
}

}  // namespace gdrproxy::doctor
