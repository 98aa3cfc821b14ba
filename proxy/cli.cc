// `gdrproxy run`, `gdrproxy agent` and `gdrproxy trace summarize` (the tests' helpers are not
// here: they are gdrproxy-testkit's, tests/testkit/). Each callback parses options and calls into
// the library; no behaviour lives here.
#include "proxy/cli.h"

#include <fstream>
#include <iostream>

#include "base/command_failure.h"
#include "proxy/agent/agent.h"
#include "proxy/agent/fd_store_holder.h"
#include "proxy/oci/hook_command.h"
#include "proxy/oci/oci_command.h"
#include "proxy/run/run_command.h"
#include "proxy/trace/trace_summary.h"

#include <unistd.h>

namespace gdrproxy::proxy {
namespace {

TrapCopyChoice trap_copy_choice(const std::string& word) {
  return word == "on"    ? TrapCopyChoice::kOn
         : word == "off" ? TrapCopyChoice::kOff
                         : TrapCopyChoice::kAuto;
}

LsmChoice lsm_choice(const std::string& word) {
  return word == "on" ? LsmChoice::kOn : word == "auto" ? LsmChoice::kAuto : LsmChoice::kOff;
}

void add_run(CLI::App& app, int& exit_code, const CommandTail& tail) {
  auto* run = app.add_subcommand(
      "run",
      "Run a command with brokered device opens and decoded, policed device ioctls.\n"
      "Opens of /dev/infiniband/{uverbsN,rdma_cm} and /dev/nvidia* are checked against the\n"
      "grants and performed by gdrproxy; uverbs, NVIDIA frontend and UVM ioctls are decoded,\n"
      "checked against the policy, and traced. Other syscalls never reach gdrproxy.\n"
      "Everything after -- is the command's own, never an option of gdrproxy.\n"
      "Example: gdrproxy run --grant uverbs0 --trace -- ibv_devinfo -v\n"
      "Example: gdrproxy run --grant uverbs0,rdma_cm --mode trace -- ls -la /dev/infiniband\n"
      "Example: gdrproxy run --grant nvidiactl,nvidia0,nvidia-uvm --trace-json trace.jsonl -- "
      "python3 -c 'import torch; print(torch.cuda.device_count())'");
  auto opts = std::make_shared<RunOptions>();
  auto mode = std::make_shared<std::string>();
  auto trap = std::make_shared<std::string>("auto");
  run->add_option("--grant", opts->grants,
                  "Device the command may open, by name (uverbs0, rdma_cm, nvidiactl, nvidia0,\n"
                  "nvidia-uvm, nvidia-caps/nvidia-cap1) or /dev path; repeatable, or a comma\n"
                  "list. Default: the policy's grants, else every RDMA and NVIDIA device here")
      ->expected(1)
      ->allow_extra_args(false)
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
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
  run->add_flag("--broker-pidfd-getfd", opts->broker_pidfd_getfd,
                "Let the sandbox's processes take each other's fds with pidfd_getfd (CUDA IPC "
                "by fd, NCCL's cuMem handles): gdrproxy performs the call when the target is a "
                "process of this sandbox; without it the call needs CAP_SYS_PTRACE, which the "
                "sandbox lacks");
  run->add_flag("--keep-caps", opts->keep_caps,
                "Keep every capability in the sandbox (by default those device work does not\n"
                "need are dropped: CAP_MKNOD, CAP_SYS_RAWIO, CAP_SYS_ADMIN, CAP_SYS_PTRACE, ...)");
  run->add_option("--landlock-abi", opts->landlock_abi_max,
                  "Use Landlock only up to ABI N (default: all this kernel has; a larger N is the\n"
                  "kernel's; 0: no Landlock). What the lower ABI gives up is said at start and\n"
                  "made up for as on an older kernel (docs/SECURITY.md, \"Per kernel\"): to see\n"
                  "here what a sandbox gets on an older kernel, or to step around a defect of a\n"
                  "newer Landlock feature")
      ->check(CLI::Range(0, 1000));
  run->add_option("--nvidia-abi-as", opts->nvidia_abi_as,
                  "Judge the node's NVIDIA driver with the tables of RELEASE (one this build\n"
                  "holds: `gdrproxy doctor` lists the choice). Needed only for a driver of a\n"
                  "branch the tables do not hold; a later patch of a held branch is judged with\n"
                  "its nearest lower release without it. Every call's size is checked against\n"
                  "the named tables and a mismatch is refused as malformed")
      ->type_name("RELEASE");
  run->add_flag("--allow-unknown-nvidia-driver", opts->allow_unknown_nvidia_driver,
                "With an NVIDIA driver of a branch the ABI tables do not hold and no\n"
                "--nvidia-abi-as, run NVIDIA calls trace-only (named with the nearest lower\n"
                "release's tables, never denied) instead of refusing to start in enforce mode");
  auto sync = std::make_shared<std::string>("auto");
  run->add_option(
         "--sync-wakeup", *sync,
         "Hand the CPU to the caller on each answer (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP):\n"
         "on, off, or auto (on with at most 4 CPUs; see docs/PERFORMANCE.md)")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  auto kernel_allow = std::make_shared<std::string>("on");
  run->add_option("--kernel-allow", *kernel_allow,
                  "In enforce mode without a trace, let NVIDIA requests the policy allows\n"
                  "whatever their parameters (most UVM calls, RM_FREE, RM_MAP_MEMORY, ...) run\n"
                  "in the kernel, untrapped, where every node of their device is granted: on\n"
                  "(default) or off (trap every device ioctl; --stats then counts them)")
      ->check(CLI::IsMember({"on", "off"}));
  auto lsm = std::make_shared<std::string>("off");
  run->add_option("--lsm", *lsm,
                  "Judge device ioctls per device in the kernel too, with a BPF LSM program\n"
                  "(needs the BPF LSM active: 'bpf' in /sys/kernel/security/lsm, i.e. lsm=...,bpf\n"
                  "on the kernel command line): no ioctl runs on a device that is not granted,\n"
                  "and the --kernel-allow requests also run untrapped when only some GPUs are\n"
                  "granted. off (default), on (refuse to start where the kernel cannot run it),\n"
                  "or auto (use it where it can)")
      ->check(CLI::IsMember({"off", "on", "auto"}));
  auto trap_copy = std::make_shared<std::string>("auto");
  run->add_option("--trap-copy", *trap_copy,
                  "Have each trapped ioctl's caller copy its fd's device and the first bytes of\n"
                  "its argument while it waits (a BPF program on sched:sched_switch), so that\n"
                  "gdrproxy judges the call without a statx and a process_vm_readv of its own:\n"
                  "auto (default: where the kernel allows it), on (refuse to start without it)\n"
                  "or off. --stats says how many calls had a copy")
      ->check(CLI::IsMember({"off", "on", "auto"}));
  run->add_flag("--stats", opts->stats,
                "At exit, print how many notifications were served (ioctl, rdma_cm write, open,\n"
                "brokered, denied)");
  run->add_option("command", opts->argv, "Command and arguments (after --)");
  run->callback([opts, mode, trap, sync, kernel_allow, lsm, trap_copy, &tail, &exit_code] {
    opts->kernel_allow = *kernel_allow == "on";
    opts->trap_copy = trap_copy_choice(*trap_copy);
    opts->lsm = lsm_choice(*lsm);
    opts->argv = command_words(opts->argv, tail);
    if (opts->argv.empty()) throw CLI::RequiredError("a command (give it after --)");
    if (*sync != "auto") opts->sync_wakeup = *sync == "on";
    if (!mode->empty()) opts->mode = *mode == "trace" ? Mode::kTrace : Mode::kEnforce;
    opts->open_trap = *trap == "write" ? OpenTrapChoice::kWrite
                      : *trap == "all" ? OpenTrapChoice::kAll
                                       : OpenTrapChoice::kAuto;
    exit_code = run_guarded("gdrproxy run", 125, [&] { return run_supervised(*opts); });
  });
}

void add_agent(CLI::App& app, int& exit_code) {
  auto* agent = app.add_subcommand(
      "agent",
      "Serve the seccomp listeners that OCI runtimes (runc, crun) hand over through\n"
      "linux.seccomp.listenerPath: one session per container, device calls decoded, policed\n"
      "and traced as under `gdrproxy run`. What each container gets (devices, policy, mode,\n"
      "trace) comes from the operator's config, matched on the container id, bundle and\n"
      "listenerMetadata; a container no rule matches gets no device. Only root may connect.\n"
      "Runs in the initial pid namespace; stops on SIGTERM/SIGINT (containers' trapped calls then\n"
      "fail with ENOSYS).\n"
      "Example: gdrproxy agent --config configs/agent/example.json --trace-dir "
      "/run/gdrproxy/traces\n"
      "Example: gdrproxy agent ctl list");
  auto opts = std::make_shared<AgentOptions>();
  auto config = std::make_shared<std::string>();
  auto trace_dir = std::make_shared<std::string>();
  auto fd_store = std::make_shared<std::string>();
  agent->add_option("--socket", opts->socket, "Listener socket runtimes connect to")
      ->capture_default_str();
  agent->add_option("--ctl-socket", opts->ctl_socket, "Control socket (`gdrproxy agent ctl`)")
      ->capture_default_str();
  agent->add_option("--config", *config,
                    "Agent config (JSON: container rules; see docs/CONTAINERS.md). Default: "
                    "every container gets no device");
  agent->add_option("--trace-dir", *trace_dir,
                    "Directory for per-container JSONL traces (rules with \"trace\": true)");
  agent->add_option("--fd-store", *fd_store,
                    "Keep every container's listener in a holder process at this socket (started "
                    "if none runs), so that a restarted agent re-attaches running containers; "
                    "their trapped calls wait for it meanwhile instead of failing with ENOSYS (a "
                    "call a killed agent was handling is handled again by the next). The holder "
                    "also accepts runtimes for the agent and keeps the runtime socket across a "
                    "kill or SIGTERM, so runtimes wait for the next agent; `ctl drain` removes it");
  agent->add_flag("--fd-store-external", opts->fd_store_external,
                  "With --fd-store: the holder is another process's (`gdrproxy agent fd-store "
                  "PATH`, e.g. a container of the agent's pod, where the runtime kills whatever "
                  "the agent's container leaves): wait up to 30 s for it to answer at start, and "
                  "never start one; a holder gone while the agent runs gets every live entry "
                  "back once the next one answers");
  auto metrics = std::make_shared<std::string>();
  agent
      ->add_option("--metrics", *metrics,
                   "Serve Prometheus metrics (text format 0.0.4) at GET /metrics on ADDR: a unix "
                   "socket path (root only, mode 0600), 127.0.0.1:PORT (this host), or "
                   "0.0.0.0:PORT (a pod's network, for a cluster's Prometheus); no other address "
                   "is taken. Scrapers are read on the agent's loop with the handshake deadline, "
                   "at most 4 at once, their request at most 8 KiB. Series: docs/METRICS.md")
      ->type_name("ADDR");
  agent->add_option("--dev-root", opts->dev_root, "Where the device nodes are")
      ->capture_default_str();
  auto agent_abi_as = std::make_shared<std::string>();
  agent
      ->add_option("--nvidia-abi-as", *agent_abi_as,
                   "Judge the node's NVIDIA driver with the tables of RELEASE (over the config's\n"
                   "\"nvidia_abi_as\"); needed only for a branch the tables do not hold (see\n"
                   "`gdrproxy run --help`)")
      ->type_name("RELEASE");
  agent
      ->add_option("--blocking-deadline-ms", opts->blocking_deadline_ms,
                   "A trapped call not answered by then (an open's path lookup, or a read of an "
                   "ioctl's argument, blocked on a container's filesystem) fails with EIO and its "
                   "session is marked degraded; that container's next calls wait for it. Other "
                   "containers are served on their own threads meanwhile")
      ->capture_default_str()
      ->check(CLI::Range(1u, 600000u));
  agent
      ->add_option("--handshake-deadline-ms", opts->handshake_deadline_ms,
                   "A connection (a runtime handing over a listener, a `ctl` command) not done by "
                   "then, however it trickles its bytes, is closed; connections are read "
                   "asynchronously, never holding other runtimes or running containers. A "
                   "container's bundle (its config.json) not read by then, on a thread of its own, "
                   "refuses that handover")
      ->capture_default_str()
      ->check(CLI::Range(1u, 600000u));
  agent
      ->add_option("--max-handshakes", opts->max_handshakes,
                   "At most this many connections to each socket are read at once; a new one "
                   "closes the oldest unfinished, so idle connections cannot starve a runtime")
      ->capture_default_str()
      ->check(CLI::Range(1u, 65536u));
  agent->add_flag("-q,--quiet", opts->quiet, "No log lines on stderr");
  agent
      ->add_option("--rail-state-dir", opts->rail_state_dir,
                   "Where `gdrproxy hook` keeps its journals: at start, the rails of containers "
                   "whose process is gone are given back (as `gdrproxy hook sweep` does)")
      ->capture_default_str();
  agent
      ->add_option("--sync-wakeup", opts->sync_wakeup,
                   "Hand the CPU to the caller on each answer (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) "
                   "on every container's listener: each container has its own session thread, "
                   "which the scheduler then keeps beside its callers")
      ->capture_default_str();
  auto agent_trap_copy = std::make_shared<std::string>("auto");
  agent
      ->add_option("--trap-copy", *agent_trap_copy,
                   "Have each trapped ioctl's caller copy its fd's device and the first bytes of "
                   "its argument while it waits (BPF on sched:sched_switch), so that the agent "
                   "judges it without a statx and a process_vm_readv: auto (default), on (refuse "
                   "to start without it) or off")
      ->check(CLI::IsMember({"off", "on", "auto"}));
  auto agent_lsm = std::make_shared<std::string>("off");
  agent
      ->add_option("--lsm", *agent_lsm,
                   "Judge every container's device ioctls per device in the kernel too, with one "
                   "BPF LSM program judging each container by its cgroup v2 (needs the BPF LSM "
                   "active: 'bpf' in /sys/kernel/security/lsm): no ioctl runs on a device the "
                   "container was not granted, even on an fd it did not open itself, and what its "
                   "profile lets run untrapped runs only on the granted devices the policy allows "
                   "it on. off (default), on (refuse to start without it, and refuse a container "
                   "it cannot judge: no cgroup v2 of its own) or auto (judge where it can; `ctl "
                   "list` says which containers are judged)")
      ->check(CLI::IsMember({"off", "on", "auto"}));
  auto agent_lsm_pin = std::make_shared<std::string>();
  agent->add_option("--lsm-pin", *agent_lsm_pin,
                    "With --lsm: pin the judge in this directory of a bpffs (e.g. "
                    "/sys/fs/bpf/gdrproxy), so that it outlives the agent: through a kill or a "
                    "restart every container stays judged, and the next agent takes the judge "
                    "over. Containers whose profiles let requests run untrapped on device classes "
                    "only partly granted (`oci prepare --kernel-allow --lsm-judged`) need it. "
                    "Unpinned when the agent stops with no container left");
  auto* ctl = agent->add_subcommand(
      "ctl",
      "Ask a running agent: list (containers), stats (counts, p50/p99 handler latency), drain\n"
      "(take no new container or process, stop when the last container ends: for upgrades),\n"
      "drain ID (no new process joins that container) or judge-pending PID [ID] (with --lsm:\n"
      "judge the cgroup of a new container's init PID in the kernel, refusing every ioctl on\n"
      "a guarded device until its handover; what `gdrproxy hook judge` asks)");
  auto command = std::make_shared<std::string>();
  auto args = std::make_shared<std::vector<std::string>>();
  ctl->add_option("command", *command, "list | stats | drain | judge-pending")
      ->required()
      ->check(CLI::IsMember({"list", "stats", "drain", "judge-pending"}));
  ctl->add_option("args", *args, "drain: a container id; judge-pending: PID and container id");
  ctl->add_option("--ctl-socket", opts->ctl_socket, "Control socket")->capture_default_str();
  ctl->callback([opts, command, args, &exit_code] {
    const size_t most = *command == "drain" ? 1 : *command == "judge-pending" ? 2 : 0;
    if (args->size() > most || (*command == "judge-pending" && args->empty()))
      throw CLI::ValidationError("args", *command == "judge-pending"
                                             ? "judge-pending takes PID and a container id"
                                             : "only drain takes one (a container id)");
    std::string line = *command;
    for (const std::string& a : *args) line += " " + a;
    exit_code = agent_ctl(opts->ctl_socket, line);
  });
  auto* holder = agent->add_subcommand(
      "fd-store",
      "Run the fd store's holder at PATH in the foreground: the process that keeps every\n"
      "container's seccomp listener while no agent runs, for `gdrproxy agent --fd-store PATH\n"
      "--fd-store-external`. Without it the agent double-forks its own holder, which outlives the\n"
      "agent only where the service manager kills the agent alone (systemd's KillMode=process);\n"
      "a container runtime kills every process an agent's container leaves, the holder too, so\n"
      "on Kubernetes the holder runs as a container of its own in the agent's pod. SIGTERM or\n"
      "SIGINT stops it and drops every listener it holds (an agent restart then loses its\n"
      "containers; with no agent running their trapped calls fail with ENOSYS): stop it only\n"
      "with the node drained. Refuses to start while a holder answers at PATH. Root only.\n"
      "Example: gdrproxy agent fd-store /run/gdrproxy/fds.sock");
  auto holder_path = std::make_shared<std::string>();
  holder->add_option("path", *holder_path, "The holder's socket (the agent's --fd-store)")
      ->required();
  holder->callback([holder_path, &exit_code] {
    exit_code = run_guarded("gdrproxy agent fd-store", 1, [&] { return run_holder(*holder_path); });
  });
  agent->callback([ctl, holder, opts, config, trace_dir, fd_store, metrics, agent_trap_copy,
                   agent_lsm, agent_lsm_pin, agent_abi_as, &exit_code] {
    if (ctl->parsed() || holder->parsed()) return;
    if (opts->fd_store_external && fd_store->empty())
      throw CLI::ValidationError("--fd-store-external", "goes with --fd-store");
    opts->trap_copy = trap_copy_choice(*agent_trap_copy);
    opts->lsm = lsm_choice(*agent_lsm);
    if (!agent_lsm_pin->empty()) {
      if (opts->lsm == LsmChoice::kOff) throw CLI::ValidationError("--lsm-pin", "goes with --lsm");
      opts->lsm_pin = *agent_lsm_pin;
    }
    if (!config->empty()) opts->config = *config;
    if (!trace_dir->empty()) opts->trace_dir = *trace_dir;
    if (!fd_store->empty()) opts->fd_store = *fd_store;
    if (!metrics->empty()) opts->metrics = *metrics;
    if (!agent_abi_as->empty()) opts->nvidia_abi_as = *agent_abi_as;
    exit_code = run_guarded("gdrproxy agent", 1, [&] { return run_agent(*opts); });
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

}  // namespace

// The command a subcommand starts: the positional words before "--", then every word after it
// (getopt's meaning of "--"). The words after "--" never reached the option parser.
std::vector<std::string> command_words(std::vector<std::string> before, const CommandTail& tail) {
  if (tail.words) before.insert(before.end(), tail.words->begin(), tail.words->end());
  return before;
}

void register_commands(CLI::App& app, int& exit_code, CommandTail& tail) {
  add_run(app, exit_code, tail);
  add_agent(app, exit_code);
  add_oci_commands(app, exit_code);
  add_cdi_command(app, exit_code);
  add_runtime_command(app, exit_code, tail.words);
  add_hook_commands(app, exit_code);
  add_trace(app, exit_code);
}

}  // namespace gdrproxy::proxy
