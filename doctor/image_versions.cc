// Versions an image carries, against the reference image's (see image_versions.h).
#include "doctor/image_versions.h"

#include <set>
#include <sstream>

#include "base/file_io.h"
#include "doctor/reference_versions.h"

namespace gdrproxy::doctor {
namespace {

constexpr size_t kMaxDirs = 256;  // library directories looked at in one image

const char* const kTriplets[] = {"x86_64-linux-gnu", "aarch64-linux-gnu"};

// The text of an image file (symlinks resolved inside the image); nullopt if absent.
std::optional<std::string> image_text(const Rootfs& rootfs, const std::string& path) {
  auto real = rootfs.resolve(path);
  if (!real) return std::nullopt;
  return read_text(rootfs.host(*real));
}

// Library directories of the image, resolved inside it, deduplicated, in search order.
std::vector<std::string> library_dirs(const Rootfs& rootfs) {
  std::vector<std::string> dirs;
  auto add_prefix = [&](const std::string& p) {
    dirs.push_back(p + "/lib");
    dirs.push_back(p + "/lib64");
    for (const char* t : kTriplets) dirs.push_back(p + "/lib/" + t);
  };
  add_prefix("/usr");
  add_prefix("");
  add_prefix("/usr/local");
  for (const auto& d : rootfs.ld_so_conf_dirs()) dirs.push_back(d);
  // Prefixes of their own: /opt/libfabric, /usr/local/nixl, and one level deeper (HPC-X's
  // /opt/hpcx/ucx).
  std::vector<std::string> deeper;
  for (const char* parent : {"/opt", "/usr/local"})
    if (auto real = rootfs.resolve(parent))
      for (const auto& name : list_dir(rootfs.host(*real))) {
        const std::string prefix = std::string(parent) + "/" + name;
        add_prefix(prefix);
        deeper.push_back(prefix);
      }
  for (const auto& prefix : deeper)
    if (auto real = rootfs.resolve(prefix); real && prefix.rfind("/opt/", 0) == 0)
      for (const auto& name : list_dir(rootfs.host(*real))) add_prefix(prefix + "/" + name);
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& d : dirs) {
    auto real = rootfs.resolve(d);
    if (!real || !is_dir(rootfs.host(*real)) || !seen.insert(*real).second) continue;
    out.push_back(*real);
    if (out.size() >= kMaxDirs) break;
  }
  return out;
}

std::string pc_version(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Version:", 0) == 0) return trim(line.substr(8));
  return "";
}

// NCCL_MAJOR/MINOR/PATCH of nccl.h.
std::string nccl_h_version(const std::string& text) {
  std::map<std::string, std::string> v;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string def, name, value;
    if (f >> def >> name >> value && def == "#define" &&
        (name == "NCCL_MAJOR" || name == "NCCL_MINOR" || name == "NCCL_PATCH"))
      v[name] = value;
  }
  if (v.size() != 3) return "";
  return v["NCCL_MAJOR"] + "." + v["NCCL_MINOR"] + "." + v["NCCL_PATCH"];
}

void add(std::vector<FoundVersion>& list, const std::string& version, const std::string& source) {
  if (version.empty()) return;
  for (const auto& f : list)
    if (compare_versions(version_numbers(f.version), version_numbers(version)) == 0 &&
        !version_numbers(version).empty())
      return;
  list.push_back({version, source});
}

std::string joined(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

}  // namespace

std::vector<int> version_numbers(const std::string& s) {
  std::vector<int> out;
  size_t i = !s.empty() && (s[0] == 'v' || s[0] == 'V') ? 1 : 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    long n = 0;
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i - start < 9) n = n * 10 + (s[i++] - '0');
    out.push_back(static_cast<int>(n));
    if (i + 1 < s.size() && s[i] == '.' && s[i + 1] >= '0' && s[i + 1] <= '9')
      ++i;
    else
      break;
  }
  return out;
}

int compare_versions(const std::vector<int>& a, const std::vector<int>& b) {
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const int x = i < a.size() ? a[i] : 0, y = i < b.size() ? b[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

std::map<std::string, std::vector<FoundVersion>> find_image_versions(const Rootfs& rootfs) {
  std::map<std::string, std::vector<FoundVersion>> found;
  // The reference image's own record, what its build really used.
  const std::string record = "/etc/gdrproxy-workload/versions";
  if (auto text = image_text(rootfs, record)) {
    const std::map<std::string, std::string> keys = {{"UCX_VERSION", "ucx"},
                                                     {"LIBFABRIC_VERSION", "libfabric"},
                                                     {"NIXL_VERSION", "nixl"},
                                                     {"NCCL_VERSION", "nccl"}};
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);) {
      const size_t eq = line.find('=');
      if (eq == std::string::npos) continue;
      auto k = keys.find(line.substr(0, eq));
      if (k != keys.end()) add(found[k->second], trim(line.substr(eq + 1)), record);
    }
  }
  const std::vector<std::string> dirs = library_dirs(rootfs);
  for (const auto& [key, pc] : std::map<std::string, std::string>{{"ucx", "ucx.pc"},
                                                                  {"libfabric", "libfabric.pc"},
                                                                  {"nixl", "nixl.pc"},
                                                                  {"nccl", "nccl.pc"}}) {
    if (!found[key].empty()) continue;  // the record wins
    std::vector<std::string> pcdirs;
    for (const auto& d : dirs) pcdirs.push_back(d + "/pkgconfig");
    pcdirs.push_back("/usr/share/pkgconfig");
    for (const auto& d : pcdirs)
      if (auto text = image_text(rootfs, d + "/" + pc))
        add(found[key], pc_version(*text), d + "/" + pc);
  }
  if (found["nccl"].empty()) {
    // libnccl.so.2.23.4: NCCL names its real file after its release.
    for (const auto& d : dirs)
      for (const auto& name : list_dir(rootfs.host(d))) {
        if (name.rfind("libnccl.so.", 0) != 0) continue;
        auto real = rootfs.resolve(d + "/" + name);
        if (!real) continue;
        const std::string base = basename_of(*real);
        const std::string v = base.rfind("libnccl.so.", 0) == 0 ? base.substr(11) : "";
        if (version_numbers(v).size() >= 3) add(found["nccl"], v, *real);
      }
    std::vector<std::string> includes = {"/usr/include", "/usr/local/cuda/include"};
    for (const char* parent : {"/opt", "/usr/local"})
      if (auto real = rootfs.resolve(parent))
        for (const auto& name : list_dir(rootfs.host(*real)))
          includes.push_back(std::string(parent) + "/" + name + "/include");
    for (const auto& d : includes)
      if (auto text = image_text(rootfs, d + "/nccl.h"))
        add(found["nccl"], nccl_h_version(*text), d + "/nccl.h");
  }
  for (auto it = found.begin(); it != found.end();)
    it = it->second.empty() ? found.erase(it) : std::next(it);
  return found;
}

void compare_image_versions(const std::map<std::string, std::vector<FoundVersion>>& found,
                            const nlohmann::json& reference, Report& report) {
  nlohmann::json facts = nlohmann::json::object();
  const auto& components = reference.at("components");
  for (const auto& [key, ref] : components.items()) {
    const std::string id = "image.version." + key;
    const std::string name = ref.value("name", key);
    const auto rv = ref.find("version");
    const std::string ref_version =
        rv != ref.end() && rv->is_string() ? rv->get<std::string>() : "";
    const std::string where = "configs/containers/workload (ARG " +
                              ref.value("arg", std::string("?")) + "=" +
                              ref.value("tag", std::string("?")) + ")";
    auto it = found.find(key);
    if (it == found.end()) {
      report.warn(id,
                  "cannot tell the image's " + name +
                      " version: no /etc/gdrproxy-workload/versions entry, no pkg-config file" +
                      (key == "nccl" ? ", no libnccl.so.X.Y.Z, no nccl.h" : ""),
                  "install " + name +
                      "'s pkg-config file with it, or record the versions as the "
                      "reference image does in /etc/gdrproxy-workload/versions");
      continue;
    }
    std::vector<std::string> shown;
    for (const auto& f : it->second) shown.push_back(f.version + " (" + f.source + ")");
    if (it->second.size() > 1) {
      report.warn(id,
                  "several " + name + " versions in the image: " + joined(shown, ", ") +
                      ": cannot tell which one a job loads",
                  "keep one " + name + " in the image (remove the base image's copy)");
      continue;
    }
    const FoundVersion& f = it->second.front();
    const auto v = version_numbers(f.version);
    facts[key] = clean(f.version);
    if (v.empty()) {
      report.warn(id,
                  "cannot tell the image's " + name + " version: " + quote_value(f.version) +
                      " in " + f.source + " is not a version",
                  "correct " + f.source);
      continue;
    }
    std::vector<std::string> lacks;
    std::string floor;
    for (const auto& b : ref.value("below", nlohmann::json::array())) {
      const std::string bv = b.value("version", std::string());
      if (compare_versions(v, version_numbers(bv)) < 0) {
        lacks.push_back("below " + bv + ": " + b.value("why", std::string()));
        if (floor.empty() || compare_versions(version_numbers(bv), version_numbers(floor)) > 0)
          floor = bv;
      }
    }
    const std::string has = name + " " + quote_value(f.version) + " (" + f.source + ")";
    if (ref_version.empty()) {
      if (!lacks.empty())
        report.warn(
            id, has + " is older than the reference image allows: " + joined(lacks, "; "),
            "use " + name + " >= " + floor + " (the reference takes it from " + where + ")");
      else
        report.pass(id,
                    has + ": recent enough; the reference image takes " + name + " from " + where);
      continue;
    }
    const int cmp = compare_versions(v, version_numbers(ref_version));
    if (cmp == 0)
      report.pass(id, has + ", as the reference image");
    else if (cmp < 0)
      report.warn(id,
                  has + " is older than the reference image's " + ref_version + ": " +
                      (lacks.empty() ? std::string("not the version the reference pins")
                                     : joined(lacks, "; ")),
                  "build " + name + " " + ref_version + " as " + where + " does");
    else
      report.warn(id,
                  has + " is newer than the reference image's " + ref_version +
                      ": not the combination the reference (NIXL's container build) is built "
                      "and tested with",
                  "use " + ref_version + " as " + where + ", or check NIXL's release notes for " +
                      name + " " + f.version);
  }
  report.facts()["image_versions"] = facts;
}

void check_image_versions(const Rootfs& rootfs, Report& report) {
  compare_image_versions(find_image_versions(rootfs), nlohmann::json::parse(kReferenceVersionsJson),
                         report);
}

}  // namespace gdrproxy::doctor
