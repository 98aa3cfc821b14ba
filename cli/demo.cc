// The demo drives the real binary through real syscalls: it re-executes /proc/self/exe as
// `gdrproxy run` around real rdma-core tools and around the device exerciser. Where the host has
// no RDMA or NVIDIA devices it uses stand-in device nodes in a private mount namespace (real
// char devices borrowed under device names; see proxy/exercise/standin_devices.h) and says so.
#include "cli/demo.h"

#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "proxy/devices/device_catalog.h"
#include "proxy/sandbox/landlock_guard.h"
#include "proxy/trace/trace_summary.h"
#include "sysfs/demo.h"

namespace gdrproxy::cli {
namespace {

int spawn(const std::vector<std::string>& args) {
  std::cout.flush();
  std::fflush(stdout);
  pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> a;
    for (const auto& s : args) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    std::perror("exec");
    ::_exit(127);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
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
  bool have_uverbs = false;
  for (const auto& n : catalog.nodes())
    if (n.device_class == proxy::DeviceClass::kUverbs) have_uverbs = true;

  heading("This machine");
  std::cout << "kernel " << u.release << ", Landlock ABI " << proxy::landlock_abi_version()
            << ", RDMA/NVIDIA device nodes: " << catalog.nodes().size() << "\n";
  for (const auto& n : catalog.nodes()) std::cout << "  " << n.path << " (" << n.name << ")\n";

  std::vector<std::string> standin;  // prefix that runs a command with stand-in devices
  if (!have_uverbs) {
    std::cout
        << "No RDMA device here: using stand-in nodes (/dev/infiniband/uverbs0 borrows\n"
           "/dev/zero, uverbs1 /dev/full, nvidiactl /dev/random, ...). The ioctls are real;\n"
           "the kernel answers them ENOTTY/EINVAL because the borrowed devices are not NICs.\n";
    standin = {self, "standin"};
  }
  auto with = [&](std::vector<std::string> tail) {
    std::vector<std::string> v = standin;
    v.insert(v.end(), tail.begin(), tail.end());
    return v;
  };

  heading("1. Real rdma-core client under gdrproxy: ibv_devices (trace mode)");
  spawn(with({self, "run", "--mode", "trace", "--trace", "--", "ibv_devices"}));

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
  return rc != 0 ? rc : sysfs_rc;
}

}  // namespace

void register_demo(CLI::App& app, int& exit_code) {
  auto* demo = app.add_subcommand(
      "demo",
      "Show the engine at work on this machine: real device calls brokered, decoded, policed and\n"
      "traced (stand-in device nodes where there is no RDMA NIC or GPU)");
  demo->callback([&exit_code] { exit_code = run_demo(); });
}

}  // namespace gdrproxy::cli
