// `gdrproxy run`, `gdrproxy trace summarize`, `gdrproxy demo` and the hidden helpers the demo and
// tests use. Each callback parses options and calls into the library; no behaviour lives here.
#include "proxy/cli.h"

#include <fstream>
#include <iostream>

#include "proxy/exercise/cuda_dmabuf.h"
#include "proxy/exercise/device_exerciser.h"
#include "proxy/exercise/standin_devices.h"
#include "proxy/supervisor/supervisor.h"
#include "proxy/trace/trace_summary.h"

#include <unistd.h>

namespace gdrproxy::proxy {
namespace {

void add_run(CLI::App& app, int& exit_code) {
  auto* run = app.add_subcommand(
      "run",
      "Run a command with brokered device opens and decoded, policed device ioctls.\n"
      "Opens of /dev/infiniband/{uverbsN,rdma_cm} and /dev/nvidia* are checked against the\n"
      "grants and performed by gdrproxy; uverbs, NVIDIA frontend and UVM ioctls are decoded,\n"
      "checked against the policy, and traced. Other syscalls never reach gdrproxy.\n"
      "Example: gdrproxy run --grant uverbs0 --trace -- ibv_devinfo -v");
  auto opts = std::make_shared<RunOptions>();
  auto mode = std::make_shared<std::string>();
  auto trap = std::make_shared<std::string>("auto");
  run->add_option("--grant", opts->grants,
                  "Device the command may open, by name (uverbs0, rdma_cm, nvidiactl, nvidia0,\n"
                  "nvidia-uvm, nvidia-caps/nvidia-cap1) or /dev path; repeatable. Default: the\n"
                  "policy's grants, else every RDMA and NVIDIA device on this host");
  run->add_option(
         "--policy", opts->policy_file,
         "Policy JSON (see configs/policy/); default: the built-in configs/policy/default.json")
      ->check(CLI::ExistingFile);
  run->add_option(
         "--mode", *mode,
         "enforce: denied calls fail with the policy's errno and never run;\n"
         "trace: everything runs, would-be denials are logged. Default: the policy's, else enforce")
      ->check(CLI::IsMember({"trace", "enforce"}));
  run->add_flag("--trace", opts->trace_text, "Print one decoded line per device call on stderr");
  run->add_option("--trace-json", opts->trace_json,
                  "Write the decoded calls as JSON lines to FILE");
  run->add_option("--trap-opens", *trap,
                  "Which opens reach gdrproxy: write (O_WRONLY/O_RDWR; needs Landlock), all, or\n"
                  "auto (write when Landlock is available)")
      ->check(CLI::IsMember({"auto", "write", "all"}));
  run->add_flag("-q,--quiet", opts->quiet, "No informational notes on stderr");
  auto sync = std::make_shared<std::string>("auto");
  run->add_option(
         "--sync-wakeup", *sync,
         "Hand the CPU to the caller on each answer (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP):\n"
         "on, off, or auto (on with at most 4 CPUs; see docs/PERFORMANCE.md)")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  run->add_flag("--stats", opts->stats,
                "At exit, print how many notifications were served (ioctl, rdma_cm write, open,\n"
                "brokered, denied)");
  run->add_option("command", opts->argv, "Command and arguments (after --)")->required();
  run->callback([opts, mode, trap, sync, &exit_code] {
    if (*sync != "auto") opts->sync_wakeup = *sync == "on";
    if (!mode->empty()) opts->mode = *mode == "trace" ? Mode::kTrace : Mode::kEnforce;
    opts->open_trap = *trap == "write" ? OpenTrapChoice::kWrite
                      : *trap == "all" ? OpenTrapChoice::kAll
                                       : OpenTrapChoice::kAuto;
    try {
      exit_code = run_supervised(*opts);
    } catch (const std::exception& e) {
      std::cerr << "gdrproxy run: " << e.what() << "\n";
      exit_code = 125;
    }
  });
}

void add_trace(CLI::App& app, int& exit_code) {
  auto* trace =
      app.add_subcommand("trace", "Work with traces written by `gdrproxy run --trace-json`");
  trace->require_subcommand(1);
  auto* sum = trace->add_subcommand(
      "summarize", "Table per call: count, errors, denials, p50/p99 latency (microseconds)");
  auto file = std::make_shared<std::string>();
  sum->add_option("file", *file, "JSON-lines trace (- for stdin)")->required();
  sum->callback([file, &exit_code] {
    if (*file == "-") {
      summarize_trace(std::cin, std::cout);
      return;
    }
    std::ifstream in(*file);
    if (!in) {
      std::cerr << "gdrproxy trace summarize: cannot read " << *file << "\n";
      exit_code = 1;
      return;
    }
    summarize_trace(in, std::cout);
  });
}

void add_hidden(CLI::App& app, int& exit_code) {
  auto* ex = app.add_subcommand("exercise", "Issue a representative sequence of device ioctls");
  ex->group("");  // hidden: a tool for demo, doctor and tests
  auto kind = std::make_shared<std::string>();
  auto paths = std::make_shared<std::vector<std::string>>();
  ex->add_option("kind", *kind)->required()->check(CLI::IsMember({"uverbs", "nvidia", "cuda"}));
  ex->add_option("paths", *paths)->required();
  ex->callback([kind, paths, &exit_code] {
    if (*kind == "uverbs") {
      exit_code = exercise_uverbs(paths->at(0), std::cout);
    } else if (*kind == "cuda") {
      exit_code = exercise_cuda_dmabuf(paths->at(0), std::cout);
    } else {
      exit_code = exercise_nvidia(paths->at(0), paths->size() > 1 ? paths->at(1) : "", std::cout);
    }
  });
  auto* standin = app.add_subcommand("standin", "Run a command with stand-in device nodes");
  standin->group("");
  standin->prefix_command();  // everything after the subcommand is the command line
  standin->callback([standin, &exit_code] {
    auto argv = std::make_shared<std::vector<std::string>>(standin->remaining());
    if (argv->empty()) {
      std::cerr << "gdrproxy standin: no command\n";
      exit_code = 125;
      return;
    }
    try {
      enter_standin_dev();
    } catch (const std::exception& e) {
      std::cerr << "gdrproxy standin: " << e.what() << "\n";
      exit_code = 125;
      return;
    }
    std::vector<char*> a;
    for (auto& s : *argv) a.push_back(s.data());
    a.push_back(nullptr);
    ::execvp(a[0], a.data());
    std::perror("gdrproxy standin: exec");
    exit_code = 127;
  });
}

}  // namespace

void register_commands(CLI::App& app, int& exit_code) {
  add_run(app, exit_code);
  add_trace(app, exit_code);
  add_hidden(app, exit_code);
}

}  // namespace gdrproxy::proxy
