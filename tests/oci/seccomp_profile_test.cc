// The container profile of `gdrproxy oci seccomp`: how a base is resolved and merged, and, on the
// real kernel, what the compiled filter does. The idea not to miss: a merged profile is only
// right if the *compiled* filter notifies the device calls and lets everything else the base
// allowed through; the behaviour test loads it in a child with a listener and counts what the
// listener receives.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <optional>

#include "base/error.h"
#include "base/file_io.h"
#include "proxy/engine/fd_passing.h"
#include "proxy/oci/profile_compiler.h"
#include "proxy/oci/runtime_feature_cache.h"
#include "proxy/oci/seccomp_profile.h"
#include "proxy/sandbox/kernel_allow.h"
#include "proxy/sandbox/profile_untrapped.h"

namespace gdrproxy::proxy {
namespace {

using json = nlohmann::json;

json docker_base() {
  return json::parse(R"({"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
    "archMap": [{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86"]}],
    "syscalls": [
      {"names": ["read", "ioctl", "openat", "userfaultfd"], "action": "SCMP_ACT_ALLOW"},
      {"names": ["ptrace"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_PTRACE"]}},
      {"names": ["sethostname"], "action": "SCMP_ACT_ALLOW", "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
      {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38, "includes": {"minKernel": "5.3"}},
      {"names": ["pidfd_getfd"], "action": "SCMP_ACT_ERRNO"}]})");
}

ProfileOptions options() {
  ProfileOptions o;
  o.listener_path = "/run/gdrproxy/agent.sock";
  o.metadata = "job=42";
  o.kernel_release = "6.1.0-13-amd64";
  return o;
}

// The entries of `profile` that name `syscall`.
std::vector<json> entries_for(const json& profile, const std::string& syscall) {
  std::vector<json> out;
  for (const json& e : profile["syscalls"])
    for (const json& n : e["names"])
      if (n == syscall) out.push_back(e);
  return out;
}

TEST(OciSeccomp, DockerFormatIsResolvedForThisMachineAndItsCaps) {
  ProfileOptions o = options();
  o.caps = {"CAP_CHOWN"};
  const json r = resolve_base_profile(docker_base(), o, "base.json");
  EXPECT_TRUE(entries_for(r, "ptrace").empty());        // needs CAP_SYS_PTRACE
  EXPECT_EQ(entries_for(r, "sethostname").size(), 1u);  // excluded only with CAP_SYS_ADMIN
  EXPECT_EQ(entries_for(r, "clone3").size(), 1u);       // 6.1 >= 5.3
  o.caps = {"CAP_SYS_PTRACE", "CAP_SYS_ADMIN"};
  o.kernel_release = "5.2.0";
  const json r2 = resolve_base_profile(docker_base(), o, "base.json");
  EXPECT_EQ(entries_for(r2, "ptrace").size(), 1u);
  EXPECT_TRUE(entries_for(r2, "sethostname").empty());
  EXPECT_TRUE(entries_for(r2, "clone3").empty());
  EXPECT_FALSE(r2.contains("archMap"));
}

TEST(OciSeccomp, UnconditionalAllowOfATrappedSyscallIsRewrittenUnderAnAlwaysTrueCondition) {
  const json m = merge_profile(resolve_base_profile(docker_base(), options(), "b"), options());
  bool allow_rewritten = false, notify = false;
  for (const json& e : entries_for(m, "ioctl")) {
    ASSERT_TRUE(e.contains("args")) << e.dump();  // nothing unconditional left on ioctl
    if (e["action"] == "SCMP_ACT_ALLOW") {
      allow_rewritten = e["names"].size() == 1 && e["args"][0]["op"] == "SCMP_CMP_GE" &&
                        e["args"][0]["value"] == 0;
    }
    notify = notify || e["action"] == "SCMP_ACT_NOTIFY";
  }
  EXPECT_TRUE(allow_rewritten);
  EXPECT_TRUE(notify);
  // read stays in an entry of its own, unconditional.
  ASSERT_EQ(entries_for(m, "read").size(), 1u);
  EXPECT_FALSE(entries_for(m, "read")[0].contains("args"));
  // The base's ALLOW of userfaultfd gives way to the refusal.
  ASSERT_EQ(entries_for(m, "userfaultfd").size(), 1u);
  EXPECT_EQ(entries_for(m, "userfaultfd")[0]["action"], "SCMP_ACT_ERRNO");
  EXPECT_EQ(m["listenerPath"], "/run/gdrproxy/agent.sock");
  EXPECT_EQ(m["listenerMetadata"], "job=42");
  EXPECT_EQ(m["architectures"], json::array({"SCMP_ARCH_X86_64"}));
}

TEST(OciSeccomp, PidfdGetfdIsAlwaysTrapped) {
  // Whatever the base says (Docker's refuses it, Podman's allows it), the agent judges the call:
  // brokered where the container's rule says so, refused elsewhere (issue 29).
  ProfileOptions o = options();
  const json refusing = merge_profile(resolve_base_profile(docker_base(), o, "b"), o);
  ASSERT_EQ(entries_for(refusing, "pidfd_getfd").size(), 1u);
  EXPECT_EQ(entries_for(refusing, "pidfd_getfd")[0]["action"], "SCMP_ACT_NOTIFY");
  json allowing = docker_base();
  allowing["syscalls"].back()["action"] = "SCMP_ACT_ALLOW";
  const json merged = merge_profile(resolve_base_profile(allowing, o, "b"), o);
  ASSERT_EQ(entries_for(merged, "pidfd_getfd").size(), 1u);
  EXPECT_EQ(entries_for(merged, "pidfd_getfd")[0]["action"], "SCMP_ACT_NOTIFY");
  const json none = merge_profile(nullptr, o);
  ASSERT_EQ(entries_for(none, "pidfd_getfd").size(), 1u);
  EXPECT_EQ(entries_for(none, "pidfd_getfd")[0]["action"], "SCMP_ACT_NOTIFY");
}

TEST(OciSeccomp, MalformedBaseIsRefusedWithItsField) {
  auto error_of = [](const char* text) -> std::string {
    try {
      resolve_base_profile(json::parse(text), options(), "base.json");
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_NE(error_of(R"({"syscalls": []})").find("base.json: defaultAction"), std::string::npos);
  EXPECT_NE(error_of(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["x"]}]})")
                .find("syscalls[0].action"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"defaultAction": "SCMP_ACT_ALLOW",
                         "syscalls": [{"names": [], "action": "SCMP_ACT_ALLOW"}]})")
                .find("syscalls[0].names"),
            std::string::npos);
}

// Loads `profile` in a child, runs `calls` there, and returns how many notifications of each
// syscall number the listener received (each answered with ENOTTY) and the child's results.
struct Observed {
  std::map<int, int> notified;
  std::string results;
};

Observed run_under(const json& profile, const std::function<std::string()>& calls) {
  const std::vector<sock_filter> prog = profile_to_bpf(profile);
  int sp[2], out[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
  EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    sock_fprog fp{static_cast<unsigned short>(prog.size()), const_cast<sock_filter*>(prog.data())};
    const long fd =
        ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &fp);
    if (fd < 0 || !send_fd(sp[1], static_cast<int>(fd))) _exit(3);
    const std::string r = calls();
    (void)!::write(out[1], r.data(), r.size());
    _exit(0);
  }
  ::close(sp[1]);
  ::close(out[1]);
  std::string why;
  const int listener = recv_fd(sp[0], why);
  Observed o;
  EXPECT_GE(listener, 0) << why;
  // Serve until the child is done (its result pipe closes).
  for (;;) {
    pollfd p[2] = {{listener, POLLIN, 0}, {out[0], POLLIN, 0}};
    if (::poll(p, 2, 5000) <= 0) break;
    if (p[0].revents & POLLIN) {
      seccomp_notif req{};
      if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0) {
        ++o.notified[req.data.nr];
        seccomp_notif_resp resp{};
        resp.id = req.id;
        resp.error = -ENOTTY;
        ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
      }
      continue;
    }
    if (p[1].revents) {
      char buf[512];
      ssize_t n;
      while ((n = ::read(out[0], buf, sizeof buf)) > 0)
        o.results.append(buf, static_cast<size_t>(n));
      break;
    }
  }
  int st = 0;
  ::waitpid(child, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
  ::close(listener);
  ::close(out[0]);
  ::close(sp[0]);
  return o;
}

std::string errno_of(long rc) {
  return rc < 0 ? std::string(strerrorname_np(errno)) : "OK";
}

TEST(OciSeccomp, CompiledMergedProfileNotifiesDeviceCallsAndKeepsTheBaseForTheRest) {
  json base = docker_base();
  // What the child itself needs after loading, beyond the base's read/ioctl/openat.
  base["syscalls"].push_back({{"names",
                               {"write", "close", "exit_group", "exit", "getpid", "sendmsg", "brk",
                                "mmap", "munmap", "mremap", "futex"}},
                              {"action", "SCMP_ACT_ALLOW"}});
  const json m = merge_profile(resolve_base_profile(base, options(), "b"), options());
  const Observed o = run_under(m, [] {
    std::string r;
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // read-only: not trapped
    r += "ro-open=" + std::string(null >= 0 ? "OK" : strerrorname_np(errno)) + ";";
    int v = 0;
    r += "fioclex=" + errno_of(::ioctl(null, FIOCLEX)) + ";";              // allowed by the base
    r += "uverbs-ioctl=" + errno_of(::ioctl(null, 0xc0181b01, &v)) + ";";  // notified
    r += "rw-open=" + errno_of(::open("/dev/null", O_RDWR | O_CLOEXEC)) + ";";  // notified
    r += "getppid=" + errno_of(::syscall(SYS_getppid)) + ";";  // the base's default ERRNO
    r += "userfaultfd=" + errno_of(::syscall(SYS_userfaultfd, 0)) + ";";
    return r;
  });
  EXPECT_EQ(o.results,
            "ro-open=OK;fioclex=OK;uverbs-ioctl=ENOTTY;rw-open=ENOTTY;getppid=EPERM;"
            "userfaultfd=EPERM;");
  EXPECT_EQ(o.notified.at(SYS_ioctl), 1);
  EXPECT_EQ(o.notified.at(SYS_openat), 1);
  EXPECT_EQ(o.notified.size(), 2u);
}

TEST(OciSeccomp, WithoutTheRewriteLibseccompWouldDropTheTraps) {
  // The reason for the rewrite, kept true: the base's unconditional ALLOW next to the notify
  // rules compiles to "ALLOW ioctl", and the uverbs ioctl is never notified.
  json m = merge_profile(resolve_base_profile(docker_base(), options(), "b"), options());
  m["syscalls"].push_back({{"names", {"ioctl"}}, {"action", "SCMP_ACT_ALLOW"}});
  const std::string pfc = profile_to_pfc(m);
  const auto at = pfc.find("filter for syscall \"ioctl\"");
  ASSERT_NE(at, std::string::npos);
  const std::string ioctl_part = pfc.substr(at, pfc.find("# filter for syscall", at + 1) - at);
  EXPECT_EQ(ioctl_part.find("0x7fc00000"), std::string::npos) << ioctl_part;  // no NOTIFY left
}

// The requests the built-in policy lets run untrapped on a host whose GPUs are all granted, as
// `oci prepare --kernel-allow` computes them (about a hundred UVM calls and frontend escapes).
std::vector<uint32_t> builtin_untrapped() {
  KernelAllowFacts f;
  f.nvidia_abi = nvidia_known_abis().back();
  f.nvidia_frontend_all_granted = f.nvidia_uvm_all_granted = true;
  f.nvidia_frontend_any_granted = f.nvidia_uvm_any_granted = true;
  return kernel_allowed_ioctls(Policy::builtin_default(), f).requests;
}

json base_for_child() {
  json base = docker_base();
  base["syscalls"].push_back({{"names",
                               {"write", "close", "exit_group", "exit", "getpid", "sendmsg", "brk",
                                "mmap", "munmap", "mremap", "futex"}},
                              {"action", "SCMP_ACT_ALLOW"}});
  return base;
}

// The compiled profile, loaded on this kernel, lets exactly the allowed requests run untrapped:
// each of them runs without a notification, while their neighbours (the same escape with other
// direction bits, every other UVM number) and the other device calls are still notified. This is
// what libseccomp's ordering must give (proxy/sandbox/profile_untrapped.h).
TEST(OciSeccomp, UntrappedRequestsRunInTheKernelAndTheirNeighboursStillTrap) {
  const std::vector<uint32_t> allowed = builtin_untrapped();
  ASSERT_GT(allowed.size(), 50u);
  ProfileOptions o = options();
  o.filter.kernel_allowed_ioctls = allowed;
  const json m = merge_profile(resolve_base_profile(base_for_child(), o, "b"), o);
  // First in the profile, before the base's rules and the traps; a request with an exact trap of
  // its own (UVM's initialisation) keeps trapping.
  const std::vector<SyscallRule> traps = notify_rules(o.filter);
  const std::vector<uint32_t> untrapped = profile_untrapped_ioctls(m).requests;
  EXPECT_GT(untrapped.size(), allowed.size() - 5);
  for (size_t i = 0; i < untrapped.size(); ++i)
    EXPECT_EQ(m["syscalls"][i], untrapped_ioctl_entry(untrapped[i])) << i;
  for (const uint32_t r : allowed) {
    if (std::binary_search(untrapped.begin(), untrapped.end(), r)) continue;
    EXPECT_TRUE(std::any_of(traps.begin(), traps.end(),
                            [r](const SyscallRule& t) {
                              return t.arg && t.arg->mask == 0xffffffff && t.arg->value == r;
                            }))
        << std::hex << r;
  }
  auto trapped = [&](uint32_t r) {
    if (std::binary_search(untrapped.begin(), untrapped.end(), r)) return false;
    for (const SyscallRule& t : traps)
      if (t.syscall == "ioctl" && t.arg && (r & t.arg->mask) == t.arg->value) return true;
    return false;
  };
  std::vector<uint32_t> calls = allowed;
  for (const uint32_t r : allowed) calls.push_back(r ^ 0x40000000u);  // another direction
  for (uint32_t r = 0; r < 256; ++r) calls.push_back(r);              // every small (UVM) number
  calls.push_back(0xc0181b01);                                        // uverbs
  int want = 0;
  for (const uint32_t r : calls) want += trapped(r);
  ASSERT_GT(want, 100);
  const Observed seen = run_under(m, [&] {
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    for (const uint32_t r : calls) ::ioctl(null, static_cast<unsigned long>(r), nullptr);
    return std::string("done");
  });
  EXPECT_EQ(seen.results, "done");
  EXPECT_EQ(seen.notified.count(SYS_ioctl) ? seen.notified.at(SYS_ioctl) : 0, want);
  EXPECT_FALSE(profile_untrapped_ioctls(m).unjudged);
}

TEST(OciSeccomp, UntrappedRequestsAreRefusedWhereLibseccompCouldNotOrderThem) {
  // A profile that allows by default cannot hold them.
  ProfileOptions o = options();
  o.filter.kernel_allowed_ioctls = {0x21};
  EXPECT_THROW(merge_profile(json(), o), Error);
  // A trap whose compared value is the request itself would be checked first (or, of the same
  // mask, be the same node with two actions, which libseccomp refuses): it keeps trapping.
  const std::vector<SyscallRule> rules = {{"ioctl", ArgMaskedEq{1, 0xff, 0x21}, 0, "a trap"},
                                          {"ioctl", ArgMaskedEq{1, 0xffffffff, 0x7ff}, 0, "exact"}};
  EXPECT_TRUE(untrapped_ioctl_entries({0x21, 0x7ff}, rules, "SCMP_ACT_ERRNO").empty());
  // A larger value under the same trap sorts before it.
  EXPECT_EQ(untrapped_ioctl_entries({0x121}, rules, "SCMP_ACT_ERRNO").size(), 1u);
}

// What the agent reads back: only the exact entries are requests; any other rule that lets ioctl
// run on a condition of its request is named (the agent refuses such a profile), while the
// always-true rewrite of a base's ALLOW and rules of other actions are not read.
TEST(OciSeccomp, AProfilesUntrappedRequestsAreReadBackAndForeignConditionsNamed) {
  const json m = merge_profile(resolve_base_profile(docker_base(), options(), "b"), options());
  ProfileUntrapped p = profile_untrapped_ioctls(m);
  EXPECT_TRUE(p.requests.empty());
  EXPECT_FALSE(p.unjudged);  // the always-true ALLOW and the NOTIFY rules are not read
  json foreign = m;
  foreign["syscalls"].push_back(
      {{"names", {"ioctl"}},
       {"action", "SCMP_ACT_ALLOW"},
       {"args", json::array({{{"index", 1}, {"value", 0xc0181b01}, {"op", "SCMP_CMP_EQ"}}})}});
  p = profile_untrapped_ioctls(foreign);
  ASSERT_TRUE(p.unjudged);
  EXPECT_NE(p.unjudged->find("syscalls["), std::string::npos);
  json masked = m;  // the exact form, but masking the request's low bits: not ours
  masked["syscalls"].push_back(untrapped_ioctl_entry(0xc0181b01));
  masked["syscalls"].back()["args"][0]["value"] = 0xffffff00u;
  EXPECT_TRUE(profile_untrapped_ioctls(masked).unjudged);
}

// Writes `text` as an executable file at `path` (a stand-in runtime binary, or a kept answer).
void write_executable(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fd);
}

// The runtime's support for WAIT_KILLABLE_RECV is found by the flag's name in its binary (on
// kernels that have the flag), by path or through PATH; anything unreadable says no.
TEST(OciSeccomp, WaitKillableSupportIsReadFromTheRuntimeBinary) {
  char dir[] = "/tmp/gdrproxy-wkr.XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string with = std::string(dir) + "/with", without = std::string(dir) + "/without";
  std::string bulk(1 << 20, '\x7f');
  write_executable(with, bulk + "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV" + bulk);
  write_executable(without, bulk + "SECCOMP_FILTER_FLAG_WAIT_KILLABLE" + bulk);
  struct utsname u {};
  ASSERT_EQ(::uname(&u), 0);
  int major = 0, minor = 0;
  std::sscanf(u.release, "%d.%d", &major, &minor);
  const bool kernel_has_it = std::make_pair(major, minor) >= std::make_pair(5, 19);
  EXPECT_EQ(runtime_supports_wait_killable_recv(with), kernel_has_it);
  EXPECT_FALSE(runtime_supports_wait_killable_recv(without));
  EXPECT_FALSE(runtime_supports_wait_killable_recv(dir));  // a directory
  EXPECT_FALSE(runtime_supports_wait_killable_recv(std::string(dir) + "/missing"));
  ::unlink(with.c_str());
  ::unlink(without.c_str());
  ::rmdir(dir);
}

// The answer is kept per binary: a second call reads it back instead of scanning (seen by
// changing the kept answer), a changed binary is scanned afresh, and an entry that is a link or
// a directory that others may write is not believed.
TEST(OciSeccomp, WaitKillableAnswerIsKeptPerBinary) {
  char dir[] = "/tmp/gdrproxy-wkc.XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string bin = std::string(dir) + "/runc", cache = std::string(dir) + "/cache/.runtimes";
  struct utsname u {};
  ASSERT_EQ(::uname(&u), 0);
  int major = 0, minor = 0;
  std::sscanf(u.release, "%d.%d", &major, &minor);
  if (std::make_pair(major, minor) < std::make_pair(5, 19))
    GTEST_SKIP() << "the kernel has no SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV: nothing is kept";
  write_executable(bin, "runc SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV");
  EXPECT_TRUE(runtime_supports_wait_killable_recv(bin, cache));
  struct stat st {};
  ASSERT_EQ(::stat(bin.c_str(), &st), 0);
  const std::string entry = cache + "/" + runtime_feature_key("wait-killable-recv", st);
  struct stat cs {};
  ASSERT_EQ(::stat(cache.c_str(), &cs), 0) << "the cache directory (and its parent) were made";
  EXPECT_EQ(cs.st_mode & 0777, 0700u);
  ASSERT_EQ(::access(entry.c_str(), R_OK), 0) << "the answer was kept";
  write_executable(entry, "0\n");  // a kept answer is believed: no scan
  EXPECT_FALSE(runtime_supports_wait_killable_recv(bin, cache));
  write_executable(entry, "1\n");
  EXPECT_TRUE(runtime_supports_wait_killable_recv(bin, cache));
  // A replaced binary (another inode) is scanned afresh and kept under its own key.
  ::unlink(bin.c_str());
  write_executable(bin, "runc 1.1 SECCOMP_FILTER_FLAG_WAIT_KILLABLE");
  EXPECT_FALSE(runtime_supports_wait_killable_recv(bin, cache));
  // Not believed: an entry that is a link, garbage, or a cache others may write.
  ASSERT_EQ(::stat(bin.c_str(), &st), 0);
  const std::string entry2 = cache + "/" + runtime_feature_key("wait-killable-recv", st);
  const std::string lie = std::string(dir) + "/lie";
  write_executable(lie, "1\n");
  ::unlink(entry2.c_str());
  ASSERT_EQ(::symlink(lie.c_str(), entry2.c_str()), 0);
  EXPECT_FALSE(runtime_supports_wait_killable_recv(bin, cache));
  ::unlink(entry2.c_str());
  write_executable(entry2, "yes\n");
  EXPECT_FALSE(runtime_supports_wait_killable_recv(bin, cache));
  write_executable(entry2, "1\n");
  ASSERT_EQ(::chmod(cache.c_str(), 0777), 0);
  EXPECT_FALSE(runtime_supports_wait_killable_recv(bin, cache));
  EXPECT_EQ(cached_runtime_feature(cache, runtime_feature_key("wait-killable-recv", st)),
            std::nullopt);
  // Bounded: past kMaxRuntimeFeatureEntries a new answer clears the others.
  ASSERT_EQ(::chmod(cache.c_str(), 0700), 0);
  for (size_t i = 0; i <= kMaxRuntimeFeatureEntries; ++i) {
    write_executable(bin, "runc " + std::string(i + 1, 'x'));
    EXPECT_FALSE(runtime_supports_wait_killable_recv(bin, cache));
  }
  ASSERT_EQ(::stat(bin.c_str(), &st), 0);
  const std::vector<std::string> kept = list_dir(cache);
  EXPECT_LT(kept.size(), kMaxRuntimeFeatureEntries) << "the cache was never cleared";
  EXPECT_NE(std::find(kept.begin(), kept.end(), runtime_feature_key("wait-killable-recv", st)),
            kept.end());
  // A cache that cannot be made still answers, by scanning.
  EXPECT_FALSE(runtime_supports_wait_killable_recv(bin, bin + "/not-a-dir"));
  std::string err;
  EXPECT_TRUE(remove_tree(dir, &err)) << err;
}

}  // namespace
}  // namespace gdrproxy::proxy
