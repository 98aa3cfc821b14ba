// The demo drives the real binary through real syscalls: it re-executes /proc/self/exe as
// `gdrproxy run` around real rdma-core tools and around the device exerciser, and as
// `gdrproxy netns select|move|restore` for the rail launcher. Where the host has no RDMA or
// NVIDIA devices it uses stand-in device nodes in a private mount namespace (real char devices
// borrowed under device names; see proxy/exercise/standin_devices.h) and says so once; the rail
// launcher works on a veth pair in network namespaces of its own (netns/demo.h).
//
// The idea not to miss: every line the demo prints must be true on the machine it runs on, so
// anything that looks like a failure (libibverbs finding no device) is explained where it appears,
// from facts probed on this host, never from assumptions.
#include "cli/demo.h"

#include <fcntl.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "cli/demo_container.h"
#include "netns/demo.h"
#include "proxy/base/unique_fd.h"
#include "proxy/devices/device_catalog.h"
#include "proxy/exercise/standin_devices.h"
#include "proxy/sandbox/landlock_guard.h"
#include "proxy/trace/trace_summary.h"
#include "sysfs/demo.h"

namespace gdrproxy::cli {
namespace {

// In a forked child: becomes `args` (argv[0] a path), or exits 127 saying why.
[[noreturn]] void exec_args(const std::vector<std::string>& args) {
  std::vector<char*> a;
  for (const auto& s : args) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  ::execv(a[0], a.data());
  std::perror("exec");
  ::_exit(127);
}

int spawn(const std::vector<std::string>& args) {
  std::cout.flush();
  std::fflush(stdout);
  pid_t pid = ::fork();
  if (pid == 0) {
    exec_args(args);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// Like spawn, with the command's stdout and stderr read line by line through one pipe (so their
// order is kept), echoed, and each line handed to `after_line`, which may print more below it.
int spawn_annotated(const std::vector<std::string>& args,
                    const std::function<void(const std::string&)>& after_line) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return spawn(args);
  UniqueFd read_end(p[0]), write_end(p[1]);
  std::cout.flush();
  std::fflush(stdout);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(write_end.get(), 1);
    ::dup2(write_end.get(), 2);
    exec_args(args);
  }
  write_end.reset();
  std::string pending;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(read_end.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, n);
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      std::cout << line << "\n";
      after_line(line);
    }
  }
  read_end.reset();
  if (!pending.empty()) {
    std::cout << pending << "\n";
    after_line(pending);
  }
  std::cout.flush();
  int st = 0;
  if (pid > 0) ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// Why libibverbs lists no device here, from what this host shows: libibverbs asks the kernel's
// RDMA netlink first and falls back to /sys/class/infiniband_verbs; it never looks at /dev.
std::string why_no_verbs_devices(bool standin) {
  const bool rdma_netlink =
      static_cast<bool>(UniqueFd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA)));
  const int e = errno;
  std::error_code ec;
  const bool sysfs = std::filesystem::exists("/sys/class/infiniband_verbs", ec);
  std::string out =
      "  ^ why: libibverbs finds devices through the kernel, not through /dev. Here the kernel's "
      "RDMA\n    netlink ";
  out += rdma_netlink ? std::string("answers")
                      : std::string("is missing (socket(NETLINK_RDMA): ") + std::strerror(e) +
                            ": this kernel has no RDMA\n    core loaded)";
  out += std::string(" and /sys/class/infiniband_verbs is ") + (sysfs ? "present" : "absent") +
         ", so it has no device to list.\n";
  if (standin)
    out +=
        "    The stand-ins are /dev nodes only: ibv_devices opens none of them and gdrproxy has "
        "nothing\n    to serve. Steps 2-5 open the stand-in nodes directly.\n";
  return out;
}

void heading(const std::string& s) {
  std::cout << "\n== " << s << "\n" << std::flush;
}

int run_demo() {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const auto tmp =
      std::filesystem::temp_directory_path() / ("gdrproxy-demo-" + std::to_string(::getpid()));
  std::filesystem::create_directories(tmp);
  const std::string trace = (tmp / "trace.jsonl").string();
  utsname u{};
  ::uname(&u);
  const auto catalog = proxy::DeviceCatalog::scan();

  heading("This machine");
  std::cout << "kernel " << u.release << ", Landlock ABI " << proxy::landlock_abi_version()
            << ", RDMA/NVIDIA device nodes: " << catalog.nodes().size() << "\n";
  for (const auto& n : catalog.nodes()) std::cout << "  " << n.path << " (" << n.name << ")\n";

  // The stand-ins steps 1-5 need: those of proxy::standin_devices() this host does not have
  // (enter_standin_dev() keeps a real node wherever there is one).
  std::string borrowed;
  bool nvidia_standin = false;
  for (const auto& d : proxy::standin_devices()) {
    std::error_code ec;
    if (std::filesystem::exists("/dev/" + d.name, ec)) continue;
    const std::string item = "/dev/" + d.name + " = " + d.source;
    const size_t line_len = borrowed.size() - (borrowed.rfind('\n') + 1);
    borrowed += borrowed.empty() ? "  " : line_len + item.size() + 2 > 96 ? ",\n  " : ", ";
    borrowed += item;
    nvidia_standin = nvidia_standin || d.name.starts_with("nvidia");
  }
  std::vector<std::string> standin;  // prefix that runs a command with stand-in devices
  if (!borrowed.empty()) {
    std::cout << "STAND-INS: steps 1-5 run in a private mount namespace where real, harmless char\n"
                 "devices are mounted under the device names this host lacks:\n"
              << borrowed
              << "\nThe ioctls are real; the kernel answers them ENOTTY/EINVAL/ENOSYS because the\n"
                 "borrowed devices are not NICs or GPUs."
              << (nvidia_standin ? " The NVIDIA calls of step 5 go to stand-ins." : "") << "\n";
    standin = {self, "standin"};
  }
  auto with = [&](std::vector<std::string> tail) {
    std::vector<std::string> v = standin;
    v.insert(v.end(), tail.begin(), tail.end());
    return v;
  };

  heading("1. Real rdma-core client under gdrproxy: ibv_devices (trace mode)");
  spawn_annotated(with({self, "run", "--mode", "trace", "--trace", "--", "ibv_devices"}),
                  [&](const std::string& line) {
                    if (line.find("Failed to get IB devices list") != std::string::npos)
                      std::cout << why_no_verbs_devices(!standin.empty());
                  });

  heading("2. uverbs calls decoded with results (grant uverbs0 only; trace to " + trace + ")");
  int rc = spawn(with({self, "run", "--grant", "uverbs0", "--trace", "--trace-json", trace, "--",
                       self, "exercise", "uverbs", "/dev/infiniband/uverbs0"}));

  heading("3. Ungranted device: opening uverbs1 is refused by the broker");
  spawn(with({self, "run", "--grant", "uverbs0", "-q", "--", self, "exercise", "uverbs",
              "/dev/infiniband/uverbs1"}));

  heading("4. Enforce a policy that forbids REG_MR (configs/policy/deny-reg-mr.json)");
  const std::string policy = (tmp / "deny-reg-mr.json").string();
  std::ofstream(policy) << R"({"version":1,"classes":{"uverbs":{"rules":[)"
                        << R"({"action":"deny","write_cmd":"REG_MR","errno":"EACCES"}]}}})";
  spawn(with({self, "run", "--mode", "enforce", "--policy", policy, "-q", "--", self, "exercise",
              "uverbs", "/dev/infiniband/uverbs0"}));

  heading("5. NVIDIA frontend and UVM calls decoded");
  spawn(with({self, "run", "--trace", "-q", "--", self, "exercise", "nvidia", "/dev/nvidiactl",
              "/dev/nvidia-uvm"}));

  heading("6. gdrproxy trace summarize " + trace);
  std::ifstream in(trace);
  proxy::summarize_trace(in, std::cout);
  std::filesystem::remove_all(tmp);

  heading("7. Synthetic sysfs for a container on the embedded 8-GPU/8-NIC HGX H100 example node");
  std::cout.flush();
  const int sysfs_rc = sysfs::demo_example_node(std::cout);

  heading("8. Rail launcher: select RoCE rails, move them into a container, restore the host");
  const int netns_rc = netns::demo_rail_launcher(self);

  heading("9. A runc container served by gdrproxy agent: its grant, its own trace, a refused node");
  const int ctr_rc = demo_container(self);
  return rc != 0 ? rc : sysfs_rc != 0 ? sysfs_rc : netns_rc != 0 ? netns_rc : ctr_rc;
}

}  // namespace

void register_demo(CLI::App& app, int& exit_code) {
  auto* demo = app.add_subcommand(
      "demo",
      "Show the product at work on this machine: real device calls brokered, decoded, policed\n"
      "and traced (stand-in device nodes where there is no RDMA NIC or GPU), a container's\n"
      "synthetic sysfs, the rail launcher moving two stand-in rails (a veth pair) into a\n"
      "container network namespace and back, and a runc container served by the agent (root\n"
      "and runc), all in namespaces of its own");
  demo->callback([&exit_code] { exit_code = run_demo(); });
}

}  // namespace gdrproxy::cli
