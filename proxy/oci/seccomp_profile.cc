// Resolving a base profile and merging gdrproxy's rules into it (see seccomp_profile.h).
#include "proxy/oci/seccomp_profile.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>

#include "base/error.h"
#include "base/json_field_error.h"
#include "base/program_path.h"
#include "base/unique_fd.h"
#include "proxy/oci/runtime_feature_cache.h"
#include "proxy/sandbox/profile_untrapped.h"

namespace gdrproxy::proxy {
namespace {

using json = nlohmann::json;

// This machine's architecture in the names profiles use: libseccomp's and Go's.
struct NativeArch {
  const char* scmp;
  const char* go;
};
NativeArch native_arch() {
#if defined(__x86_64__)
  return {"SCMP_ARCH_X86_64", "amd64"};
#elif defined(__aarch64__)
  return {"SCMP_ARCH_AARCH64", "arm64"};
#else
#error "gdrproxy's seccomp profiles know x86_64 and aarch64"
#endif
}

// "5.19.0-1-amd64" -> {5, 19}; unreadable parts read as 0.
std::pair<int, int> kernel_version(const std::string& release) {
  int major = 0, minor = 0;
  std::sscanf(release.c_str(), "%d.%d", &major, &minor);
  return {major, minor};
}

std::string running_kernel() {
  utsname u{};
  return ::uname(&u) == 0 ? u.release : "";
}

bool contains(const json& list, const std::string& value) {
  if (!list.is_array()) return false;
  return std::any_of(list.begin(), list.end(),
                     [&](const json& v) { return v.is_string() && v.get<std::string>() == value; });
}

// Docker's conditions: includes (every cap held, arch listed, kernel new enough) and excludes
// (no cap held, arch not listed).
bool entry_applies(const json& e, const ProfileOptions& o, const std::string& origin,
                   const std::string& where) {
  const std::string arch = native_arch().go;
  auto has_cap = [&](const std::string& c) {
    return std::find(o.caps.begin(), o.caps.end(), c) != o.caps.end();
  };
  if (e.contains("includes")) {
    const json& in = e["includes"];
    if (!in.is_object()) throw json_field_error(origin, where + ".includes", "expected an object");
    if (in.contains("caps"))
      for (const json& c : in["caps"])
        if (!c.is_string() || !has_cap(c.get<std::string>())) return false;
    if (in.contains("arches") && !contains(in["arches"], arch)) return false;
    if (in.contains("minKernel")) {
      if (!in["minKernel"].is_string())
        throw json_field_error(origin, where + ".includes.minKernel", "not a string");
      const auto want = kernel_version(in["minKernel"].get<std::string>());
      const auto have =
          kernel_version(o.kernel_release.empty() ? running_kernel() : o.kernel_release);
      if (have < want) return false;
    }
  }
  if (e.contains("excludes")) {
    const json& ex = e["excludes"];
    if (!ex.is_object()) throw json_field_error(origin, where + ".excludes", "expected an object");
    if (ex.contains("caps"))
      for (const json& c : ex["caps"])
        if (c.is_string() && has_cap(c.get<std::string>())) return false;
    if (ex.contains("arches") && contains(ex["arches"], arch)) return false;
  }
  return true;
}

// The actions that let a call run (a base rule with one of these on a trapped syscall must not
// hide the trap).
bool unconditional(const json& entry) {
  return !entry.contains("args") || entry["args"].empty();
}

json always_true_condition() {
  // args[0] >= 0 holds for every 64-bit value; libseccomp orders it after the masked compares.
  return json::array({{{"index", 0}, {"value", 0}, {"valueTwo", 0}, {"op", "SCMP_CMP_GE"}}});
}

json rule_to_entry(const SyscallRule& r) {
  json e;
  e["names"] = json::array({r.syscall});
  if (r.errno_value) {
    e["action"] = "SCMP_ACT_ERRNO";
    e["errnoRet"] = r.errno_value;
  } else {
    e["action"] = "SCMP_ACT_NOTIFY";
  }
  if (r.arg)
    e["args"] = json::array({{{"index", r.arg->index},
                              {"value", r.arg->mask},
                              {"valueTwo", r.arg->value},
                              {"op", "SCMP_CMP_MASKED_EQ"}}});
  e["comment"] = "gdrproxy: " + r.why;
  return e;
}

}  // namespace

std::vector<std::string> docker_default_caps() {
  return {"CAP_CHOWN",   "CAP_DAC_OVERRIDE", "CAP_FSETID",           "CAP_FOWNER",
          "CAP_MKNOD",   "CAP_NET_RAW",      "CAP_SETGID",           "CAP_SETUID",
          "CAP_SETFCAP", "CAP_SETPCAP",      "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
          "CAP_KILL",    "CAP_AUDIT_WRITE"};
}

json resolve_base_profile(const json& base, const ProfileOptions& o, const std::string& origin) {
  if (!base.is_object()) throw json_field_error(origin, "(profile)", "expected a JSON object");
  if (!base.contains("defaultAction") || !base["defaultAction"].is_string())
    throw json_field_error(origin, "defaultAction", "expected an action name");
  json out = json::object();
  for (const char* k : {"defaultAction", "defaultErrnoRet", "flags"})
    if (base.contains(k)) out[k] = base[k];
  out["syscalls"] = json::array();
  if (base.contains("syscalls")) {
    if (!base["syscalls"].is_array())
      throw json_field_error(origin, "syscalls", "expected an array");
    for (size_t i = 0; i < base["syscalls"].size(); ++i) {
      const json& e = base["syscalls"][i];
      const std::string where = "syscalls[" + std::to_string(i) + "]";
      if (!e.is_object()) throw json_field_error(origin, where, "expected an object");
      if (!e.contains("action") || !e["action"].is_string())
        throw json_field_error(origin, where + ".action", "expected an action name");
      json names = e.contains("names") ? e["names"] : json::array();
      if (e.contains("name")) names.push_back(e["name"]);  // the old one-name form
      if (!names.is_array() || names.empty())
        throw json_field_error(origin, where + ".names",
                               "expected a non-empty array of syscall names");
      for (const json& n : names)
        if (!n.is_string())
          throw json_field_error(origin, where + ".names", "expected syscall names");
      if (!entry_applies(e, o, origin, where)) continue;
      json r = {{"names", names}, {"action", e["action"]}};
      for (const char* k : {"errnoRet", "args"})
        if (e.contains(k) && !e[k].is_null()) r[k] = e[k];
      if (r.contains("args") && !r["args"].is_array())
        throw json_field_error(origin, where + ".args", "expected an array");
      out["syscalls"].push_back(r);
    }
  }
  return out;
}

json merge_profile(const json& base_in, const ProfileOptions& o) {
  const json base = base_in.is_null() ? json{{"defaultAction", "SCMP_ACT_ALLOW"}} : base_in;
  // pidfd_getfd is always trapped: a base profile that allows it (Podman's) would let two
  // containers of the same uid and capabilities take each other's fds. The agent performs it
  // where the container's rule brokers it (judged as for the caller), and refuses it elsewhere.
  FilterOptions filter = o.filter;
  filter.trap_pidfd_getfd = true;
  const std::vector<SyscallRule> refusals = refusal_rules(filter);
  const std::vector<SyscallRule> traps = notify_rules(filter);
  // Names our rules decide entirely (an unconditional rule of ours), and names we trap only
  // under a condition (the base's rule must stay, below ours).
  std::set<std::string> ours_whole, ours_conditional;
  for (const auto* list : {&refusals, &traps})
    for (const SyscallRule& r : *list) (r.arg ? ours_conditional : ours_whole).insert(r.syscall);
  for (const auto& n : ours_whole) ours_conditional.erase(n);

  const std::string default_action = base["defaultAction"].get<std::string>();
  json out = json::object();
  out["defaultAction"] = default_action;
  if (base.contains("defaultErrnoRet")) out["defaultErrnoRet"] = base["defaultErrnoRet"];
  out["architectures"] = json::array({native_arch().scmp});
  json flags = base.contains("flags") && base["flags"].is_array() ? base["flags"] : json::array();
  if (o.wait_killable_recv && !contains(flags, "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"))
    flags.push_back("SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV");
  if (!flags.empty()) out["flags"] = flags;
  out["listenerPath"] = o.listener_path;
  if (o.metadata) out["listenerMetadata"] = *o.metadata;
  // The requests let run untrapped come first: libseccomp keeps them before the traps that cover
  // them only as checked there (proxy/sandbox/profile_untrapped.h).
  json syscalls = json::array();
  for (json& e : untrapped_ioctl_entries(o.filter.kernel_allowed_ioctls, traps, default_action))
    syscalls.push_back(std::move(e));
  for (const json& e : base.contains("syscalls") ? base["syscalls"] : json::array()) {
    json kept = e;
    kept["names"] = json::array();
    for (const json& n : e["names"]) {
      const std::string name = n.get<std::string>();
      if (ours_whole.count(name)) continue;  // our rule decides every call of it
      if (ours_conditional.count(name) && unconditional(e)) {
        // Same action under a condition that always holds, so our traps stay in the filter; an
        // ALLOW equal to the default action is the default already (runc skips such rules).
        if (e["action"] == default_action) continue;
        json rewritten = e;
        rewritten["names"] = json::array({name});
        rewritten["args"] = always_true_condition();
        syscalls.push_back(rewritten);
        continue;
      }
      kept["names"].push_back(name);
    }
    if (!kept["names"].empty()) syscalls.push_back(kept);
  }
  for (const auto* list : {&refusals, &traps})
    for (const SyscallRule& r : *list) syscalls.push_back(rule_to_entry(r));
  out["syscalls"] = syscalls;
  return out;
}

bool runtime_supports_wait_killable_recv(const std::string& runtime, const std::string& cache_dir) {
  if (kernel_version(running_kernel()) < std::pair<int, int>{5, 19}) return false;
  const std::string path = program_path(runtime);
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) return false;
  // The binary opened is the one keyed: a replaced runtime has another inode or ctime.
  const std::string key = runtime_feature_key("wait-killable-recv", st);
  if (!cache_dir.empty())
    if (const std::optional<bool> known = cached_runtime_feature(cache_dir, key)) return *known;
  // Mapped, not read into a string: a runtime is megabytes (copying runc 1.1 byte by byte took
  // about 24 ms here; the mapped scan still about 6 ms, hence the cache).
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (map == MAP_FAILED) return false;
  static constexpr char kFlag[] = "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV";
  const bool found = ::memmem(map, size, kFlag, sizeof kFlag - 1) != nullptr;
  ::munmap(map, size);
  if (!cache_dir.empty()) remember_runtime_feature(cache_dir, key, found);
  return found;
}

}  // namespace gdrproxy::proxy
