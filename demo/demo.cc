// `gdrproxy demo`, a component on top of the others (none of them depends on it). It drives the
// real binary through real syscalls: it re-executes /proc/self/exe as `gdrproxy run` around real
// rdma-core tools and around its own device calls (`gdrproxy demo device-calls`, hidden:
// device_exerciser.h), and as `gdrproxy netns select|move|restore` for the rail launcher. Where
// the host has no RDMA or NVIDIA devices it runs those steps with stand-in device nodes in a
// private mount namespace (real char devices borrowed under device names; standin_devices.h) and
// says so once; the rail launcher works on a veth pair in network namespaces of its own
// (rail_launcher.h).
//
// The idea not to miss: every line the demo prints must be true on the machine it runs on, so
// anything that looks like a failure (libibverbs finding no device) is explained where it appears,
// from facts probed on this host, never from assumptions.
#include "demo/demo.h"

#include <fcntl.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "demo/container_step.h"
#include "demo/device_exerciser.h"
#include "demo/example_node.h"
#include "demo/rail_launcher.h"
#include "demo/spawn.h"
#include "demo/standin_devices.h"
#include "proxy/devices/device_catalog.h"
#include "proxy/sandbox/landlock_guard.h"
#include "proxy/trace/trace_summary.h"

namespace gdrproxy::demo {
namespace {

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

  // The stand-ins steps 1-5 need: those of standin_devices() this host does not have
  // (enter_standin_dev() keeps a real node wherever there is one).
  std::string borrowed;
  bool nvidia_standin = false;
  for (const auto& d : standin_devices()) {
    std::error_code ec;
    if (std::filesystem::exists("/dev/" + d.name, ec)) continue;
    const std::string item = "/dev/" + d.name + " = " + d.source;
    const size_t line_len = borrowed.size() - (borrowed.rfind('\n') + 1);
    borrowed += borrowed.empty() ? "  " : line_len + item.size() + 2 > 96 ? ",\n  " : ", ";
    borrowed += item;
    nvidia_standin = nvidia_standin || d.name.starts_with("nvidia");
  }
  // Steps 1-5 run with the stand-in nodes where this host lacks any.
  const SpawnOptions standin{.standin = !borrowed.empty(), .limit_s = 0, .after_line = {}};
  if (standin.standin) {
    std::cout << "STAND-INS: steps 1-5 run in a private mount namespace where real, harmless char\n"
                 "devices are mounted under the device names this host lacks:\n"
              << borrowed
              << "\nThe ioctls are real; the kernel answers them ENOTTY/EINVAL/ENOSYS because the\n"
                 "borrowed devices are not NICs or GPUs."
              << (nvidia_standin ? " The NVIDIA calls of step 5 go to stand-ins." : "") << "\n";
  }
  // The sandboxed program of steps 2-5: this binary's own device calls (`demo device-calls`).
  auto calls = [&](std::vector<std::string> what) {
    std::vector<std::string> v = {self, "demo", "device-calls"};
    v.insert(v.end(), what.begin(), what.end());
    return v;
  };

  heading("1. Real rdma-core client under gdrproxy: ibv_devices (trace mode)");
  SpawnOptions annotated = standin;
  annotated.after_line = [&](const std::string& line) {
    if (line.find("Failed to get IB devices list") != std::string::npos)
      std::cout << why_no_verbs_devices(standin.standin);
  };
  run_and_wait({self, "run", "--mode", "trace", "--trace", "--", "ibv_devices"}, annotated);

  heading("2. uverbs calls decoded with results (grant uverbs0 only; trace to " + trace + ")");
  std::vector<std::string> step2 = {self,      "run",          "--grant", "uverbs0",
                                    "--trace", "--trace-json", trace,     "--"};
  for (auto& w : calls({"uverbs", "/dev/infiniband/uverbs0"})) step2.push_back(w);
  int rc = run_and_wait(step2, standin);

  heading("3. Ungranted device: opening uverbs1 is refused by the broker");
  std::vector<std::string> step3 = {self, "run", "--grant", "uverbs0", "-q", "--"};
  for (auto& w : calls({"uverbs", "/dev/infiniband/uverbs1"})) step3.push_back(w);
  run_and_wait(step3, standin);

  heading("4. Enforce a policy that forbids REG_MR (configs/policy/deny-reg-mr.json)");
  const std::string policy = (tmp / "deny-reg-mr.json").string();
  std::ofstream(policy) << R"({"version":1,"classes":{"uverbs":{"rules":[)"
                        << R"({"action":"deny","write_cmd":"REG_MR","errno":"EACCES"}]}}})";
  std::vector<std::string> step4 = {self,       "run",  "--mode", "enforce",
                                    "--policy", policy, "-q",     "--"};
  for (auto& w : calls({"uverbs", "/dev/infiniband/uverbs0"})) step4.push_back(w);
  run_and_wait(step4, standin);

  heading("5. NVIDIA frontend and UVM calls decoded");
  std::vector<std::string> step5 = {self, "run", "--trace", "-q", "--"};
  for (auto& w : calls({"nvidia", "/dev/nvidiactl", "/dev/nvidia-uvm"})) step5.push_back(w);
  run_and_wait(step5, standin);

  heading("6. gdrproxy trace summarize " + trace);
  std::ifstream in(trace);
  proxy::summarize_trace(in, std::cout);
  std::filesystem::remove_all(tmp);

  heading("7. Synthetic sysfs for a container on the embedded 8-GPU/8-NIC HGX H100 example node");
  std::cout.flush();
  const int sysfs_rc = example_node(std::cout);

  heading("8. Rail launcher: select RoCE rails, move them into a container, restore the host");
  const int netns_rc = rail_launcher(self);

  heading("9. A runc container served by gdrproxy agent: its grant, its own trace, a refused node");
  const int ctr_rc = container_step(self);
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
  demo->require_subcommand(0, 1);
  // The program steps 2-5 and 9 run in the sandbox: a fixed sequence of device calls.
  auto* calls = demo->add_subcommand("device-calls", "The demo's device calls (run by the demo)");
  calls->group("");  // hidden: the demo's own step, not a command of its own
  auto kind = std::make_shared<std::string>();
  auto paths = std::make_shared<std::vector<std::string>>();
  calls->add_option("kind", *kind)->required()->check(CLI::IsMember({"uverbs", "nvidia"}));
  calls->add_option("paths", *paths)->required();
  calls->callback([kind, paths, &exit_code] {
    exit_code =
        *kind == "uverbs"
            ? exercise_uverbs(paths->at(0), std::cout)
            : exercise_nvidia(paths->at(0), paths->size() > 1 ? paths->at(1) : "", std::cout);
  });
  demo->callback([demo, calls, &exit_code] {
    if (!demo->got_subcommand(calls)) exit_code = run_demo();
  });
}

}  // namespace gdrproxy::demo
