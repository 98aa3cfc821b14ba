// A model of how runc and crun turn an OCI seccomp profile into libseccomp rules (see
// profile_compiler.h): same rule shapes, same skipped rules, libseccomp's own output.
#include "proxy/oci/profile_compiler.h"

#include <seccomp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

#include "base/error.h"
#include "base/json_field_error.h"
#include "base/unique_fd.h"

namespace gdrproxy::proxy {
namespace {

using json = nlohmann::json;

uint32_t action_of(const json& entry, const json& profile, const std::string& field) {
  const std::string a = entry["action"].get<std::string>();
  int err = EPERM;
  if (entry.contains("errnoRet"))
    err = entry["errnoRet"].get<int>();
  else if (profile.contains("defaultErrnoRet"))
    err = profile["defaultErrnoRet"].get<int>();
  if (a == "SCMP_ACT_ALLOW") return SCMP_ACT_ALLOW;
  if (a == "SCMP_ACT_ERRNO") return SCMP_ACT_ERRNO(static_cast<uint16_t>(err));
  if (a == "SCMP_ACT_NOTIFY") return SCMP_ACT_NOTIFY;
  if (a == "SCMP_ACT_LOG") return SCMP_ACT_LOG;
  if (a == "SCMP_ACT_TRAP") return SCMP_ACT_TRAP;
  if (a == "SCMP_ACT_KILL" || a == "SCMP_ACT_KILL_THREAD") return SCMP_ACT_KILL;
  if (a == "SCMP_ACT_KILL_PROCESS") return SCMP_ACT_KILL_PROCESS;
  if (a == "SCMP_ACT_TRACE") return SCMP_ACT_TRACE(static_cast<uint16_t>(err));
  throw json_field_error("seccomp profile", field, "unknown action " + a);
}

scmp_compare op_of(const std::string& op, const std::string& field) {
  static const std::map<std::string, scmp_compare> ops = {
      {"SCMP_CMP_NE", SCMP_CMP_NE},
      {"SCMP_CMP_LT", SCMP_CMP_LT},
      {"SCMP_CMP_LE", SCMP_CMP_LE},
      {"SCMP_CMP_EQ", SCMP_CMP_EQ},
      {"SCMP_CMP_GE", SCMP_CMP_GE},
      {"SCMP_CMP_GT", SCMP_CMP_GT},
      {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ}};
  const auto it = ops.find(op);
  if (it == ops.end()) throw json_field_error("seccomp profile", field, "unknown comparison " + op);
  return it->second;
}

struct Ctx {
  scmp_filter_ctx ctx = nullptr;
  ~Ctx() {
    if (ctx) seccomp_release(ctx);
  }
};

void build(Ctx& c, const json& profile) {
  if (!profile.contains("defaultAction"))
    throw json_field_error("seccomp profile", "defaultAction", "missing");
  const uint32_t def =
      action_of(json{{"action", profile["defaultAction"]}}, profile, "defaultAction");
  c.ctx = seccomp_init(def);
  if (!c.ctx) throw json_field_error("seccomp profile", "defaultAction", "libseccomp refused it");
  if (profile.contains("architectures"))
    for (const json& a : profile["architectures"]) {
      const std::string name = a.get<std::string>();
      uint32_t token = 0;
      if (name == "SCMP_ARCH_X86_64")
        token = SCMP_ARCH_X86_64;
      else if (name == "SCMP_ARCH_X86")
        token = SCMP_ARCH_X86;
      else if (name == "SCMP_ARCH_X32")
        token = SCMP_ARCH_X32;
      else if (name == "SCMP_ARCH_AARCH64")
        token = SCMP_ARCH_AARCH64;
      else if (name == "SCMP_ARCH_ARM")
        token = SCMP_ARCH_ARM;
      else
        throw json_field_error("seccomp profile", "architectures", "unknown " + name);
      const int rc = seccomp_arch_add(c.ctx, token);
      if (rc != 0 && rc != -EEXIST)
        throw json_field_error("seccomp profile", "architectures",
                               name + ": " + std::strerror(-rc));
    }
  const json& list = profile.contains("syscalls") ? profile["syscalls"] : json::array();
  for (size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    const std::string field = "syscalls[" + std::to_string(i) + "]";
    const uint32_t act = action_of(e, profile, field + ".action");
    if (act == def) continue;  // runc: "requested action matches default action of filter"
    std::vector<scmp_arg_cmp> conds;
    std::set<unsigned> indexes;
    bool repeated = false;
    if (e.contains("args"))
      for (const json& a : e["args"]) {
        const unsigned idx = a.at("index").get<unsigned>();
        repeated = repeated || !indexes.insert(idx).second;
        conds.push_back(scmp_arg_cmp{idx, op_of(a.at("op").get<std::string>(), field + ".args"),
                                     a.at("value").get<uint64_t>(),
                                     a.value("valueTwo", uint64_t{0})});
      }
    for (const json& n : e["names"]) {
      const std::string name = n.get<std::string>();
      const int nr = seccomp_syscall_resolve_name(name.c_str());
      if (nr == __NR_SCMP_ERROR) continue;  // runc ignores names this libseccomp does not know
      int rc = 0;
      if (conds.empty()) {
        rc = seccomp_rule_add(c.ctx, act, nr, 0);
      } else if (!repeated) {
        rc = seccomp_rule_add_array(c.ctx, act, nr, static_cast<unsigned>(conds.size()),
                                    conds.data());
      } else {
        for (const scmp_arg_cmp& one : conds)
          if ((rc = seccomp_rule_add_array(c.ctx, act, nr, 1, &one)) != 0) break;
      }
      if (rc != 0)
        throw json_field_error("seccomp profile", field, name + ": " + std::strerror(-rc));
    }
  }
}

std::string read_memfd(const UniqueFd& fd) {
  std::string out;
  const off_t size = ::lseek(fd.get(), 0, SEEK_END);
  if (size > 0) {
    out.resize(static_cast<size_t>(size));
    if (::pread(fd.get(), out.data(), out.size(), 0) != size) out.clear();
  }
  return out;
}

}  // namespace

std::string profile_to_pfc(const json& profile) {
  Ctx c;
  build(c, profile);
  const UniqueFd fd(::memfd_create("gdrproxy-pfc", MFD_CLOEXEC));
  if (!fd || seccomp_export_pfc(c.ctx, fd.get()) != 0) {
    throw Error("seccomp profile: PFC export failed");
  }
  return read_memfd(fd);
}

std::vector<sock_filter> profile_to_bpf(const json& profile) {
  Ctx c;
  build(c, profile);
  const UniqueFd fd(::memfd_create("gdrproxy-bpf", MFD_CLOEXEC));
  if (!fd || seccomp_export_bpf(c.ctx, fd.get()) != 0) {
    throw Error("seccomp profile: BPF export failed");
  }
  const std::string bytes = read_memfd(fd);
  std::vector<sock_filter> prog(bytes.size() / sizeof(sock_filter));
  std::memcpy(prog.data(), bytes.data(), prog.size() * sizeof(sock_filter));
  return prog;
}

}  // namespace gdrproxy::proxy
