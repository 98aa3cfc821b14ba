// `gdrproxy oci seccomp`: prints a container's seccomp profile (OCI `linux.seccomp` form) or, with
// --pfc, what libseccomp compiles it to, so an operator can read what the runtime will load.
#include "proxy/oci/oci_command.h"

#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "base/command_failure.h"
#include "base/error.h"
#include "base/escape.h"
#include "proxy/engine/kernel_judgement.h"
#include "proxy/oci/agent_sockets.h"
#include "proxy/oci/bundle_prepare.h"
#include "proxy/oci/cdi_spec.h"
#include "proxy/oci/profile_compiler.h"
#include "proxy/oci/runtime_shim.h"
#include "proxy/oci/seccomp_profile.h"
#include "proxy/policy/policy.h"

namespace gdrproxy::proxy {
namespace {

struct SeccompArgs {
  std::string base, listener = kAgentSocket, metadata, runtime = "runc";
  std::string wait_killable = "auto", caps, kernel_release;
  bool metadata_set = false, pfc = false;
};

int print_profile(const SeccompArgs& a) {
  ProfileOptions o;
  o.listener_path = a.listener;
  if (a.metadata_set) o.metadata = a.metadata;
  o.kernel_release = a.kernel_release;
  if (a.caps.empty()) {
    o.caps = docker_default_caps();
  } else {
    std::stringstream ss(a.caps);
    for (std::string c; std::getline(ss, c, ',');)
      if (!c.empty()) o.caps.push_back(c.rfind("CAP_", 0) == 0 ? c : "CAP_" + c);
  }
  if (a.wait_killable == "auto") {
    o.wait_killable_recv = runtime_supports_wait_killable_recv(a.runtime);
  } else {
    o.wait_killable_recv = a.wait_killable == "yes";
  }
  nlohmann::json base;  // null: no base
  if (!a.base.empty()) {
    std::ifstream in(a.base);
    if (!in) throw Error("cannot read base profile " + a.base);
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded()) throw Error(a.base + ": not valid JSON");
    // A whole config.json: its linux.seccomp.
    const bool config = j.is_object() && j.contains("linux") && j["linux"].contains("seccomp");
    base = resolve_base_profile(config ? j["linux"]["seccomp"] : j, o, a.base);
  }
  const nlohmann::json profile = merge_profile(base, o);
  if (a.pfc)
    std::cout << profile_to_pfc(profile);
  else
    std::cout << profile.dump(2) << "\n";
  return 0;
}

}  // namespace

void add_oci_commands(CLI::App& app, int& exit_code) {
  auto* oci =
      app.add_subcommand("oci", "What gdrproxy writes into OCI bundles for `gdrproxy agent`");
  oci->require_subcommand(1);
  auto* sec = oci->add_subcommand(
      "seccomp",
      "Print a container's seccomp profile (OCI linux.seccomp form): the base profile merged\n"
      "with gdrproxy's notify rules (device ioctls, opens for writing, pidfd_getfd: the agent\n"
      "performs it where the container's rule brokers it, else refuses it), its refusals, "
      "listenerPath and listenerMetadata. A base's unconditional ALLOW\n"
      "of a trapped syscall (ioctl, openat) is rewritten under an always-true condition, because\n"
      "libseccomp drops conditional rules next to an unconditional one. Architectures are\n"
      "reduced to the native one.\n"
      "Example: gdrproxy oci seccomp --listener /run/gdrproxy/agent.sock --metadata job=42\n"
      "Example: gdrproxy oci seccomp --pfc");
  auto a = std::make_shared<SeccompArgs>();
  sec->add_option("--base", a->base,
                  "Base profile: Docker/Podman format (archMap, includes/excludes resolved for "
                  "this machine), an OCI linux.seccomp object, or a whole config.json. Default: "
                  "none (default action ALLOW)");
  sec->add_option("--listener", a->listener, "linux.seccomp.listenerPath (the agent's socket)")
      ->capture_default_str();
  auto* meta = sec->add_option("--metadata", a->metadata,
                               "linux.seccomp.listenerMetadata (what agent rules match on)");
  sec->add_flag("--broker-pidfd-getfd")
      ->description(
          "No effect, kept for existing scripts: pidfd_getfd is always trapped, "
          "and the agent's rule (\"broker_pidfd_getfd\") decides");
  sec->add_option("--caps", a->caps,
                  "The container's capabilities, comma-separated, for the base's includes and "
                  "excludes. Default: Docker's default set");
  sec->add_option("--wait-killable-recv", a->wait_killable,
                  "Add SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV: auto = when the kernel (>= 5.19) "
                  "and the runtime (--runtime) both know it")
      ->check(CLI::IsMember({"auto", "yes", "no"}))
      ->capture_default_str();
  sec->add_option("--kernel-release", a->kernel_release,
                  "Kernel release for the base's minKernel conditions (a profile made for another "
                  "machine). Default: the running kernel's");
  sec->add_option("--runtime", a->runtime, "The runtime the profile is for (name or path)")
      ->capture_default_str();
  sec->add_flag("--pfc", a->pfc, "Print libseccomp's pseudo filter code of the profile instead");
  auto* prep = oci->add_subcommand(
      "prepare",
      "Edit BUNDLE/config.json for a container served by `gdrproxy agent`, from one grant set:\n"
      "the seccomp profile (its own, or --base, merged as `oci seccomp` does) with the agent's\n"
      "listener and the grants in listenerMetadata (gdrproxy-grants=...), /dev nodes for the\n"
      "granted devices only, and device cgroup rules that deny every RDMA and NVIDIA device but\n"
      "the granted uverbs and rdma_cm nodes (NVIDIA fds are opened by the agent). For people who\n"
      "drive runc or crun by hand; the agent's rule for the container needs\n"
      "\"grants_from_metadata\": true.\n"
      "Example: gdrproxy oci prepare /run/bundles/job42 --grant uverbs0,rdma_cm");
  auto bundle = std::make_shared<std::string>();
  auto grant = std::make_shared<std::vector<std::string>>();
  auto pa = std::make_shared<SeccompArgs>();
  auto dev_root = std::make_shared<std::string>("/dev");
  prep->add_option("bundle", *bundle, "The bundle directory (holds config.json)")->required();
  prep->add_option("--grant", *grant, "Devices the container gets (names or /dev paths)")
      ->delimiter(',');
  prep->add_option("--base", pa->base, "Base profile instead of the bundle's own linux.seccomp");
  prep->add_option("--listener", pa->listener, "The agent's socket")->capture_default_str();
  auto* pmeta = prep->add_option("--metadata", pa->metadata,
                                 "More listenerMetadata lines (key=value) for the agent's rules");
  prep->add_flag("--broker-pidfd-getfd")
      ->description(
          "No effect, kept for existing scripts: pidfd_getfd is always "
          "trapped, and the agent's rule decides");
  prep->add_option("--runtime", pa->runtime, "The runtime the profile is for")
      ->capture_default_str();
  auto rails = std::make_shared<std::vector<std::string>>();
  auto rail_profile = std::make_shared<std::string>("multirail");
  auto plain = std::make_shared<bool>(false);
  prep->add_option("--rails", *rails,
                   "RoCE rails to move into the container's network namespace (createRuntime and "
                   "poststop hooks running `gdrproxy hook`)")
      ->delimiter(',');
  prep->add_option("--rail-profile", *rail_profile, "netns profile for the rails")
      ->capture_default_str();
  prep->add_flag("--allow-plain-rails", *plain, "Rails need not back an RDMA device (test rigs)");
  prep->add_option("--dev-root", *dev_root, "Where the host's device nodes are")
      ->capture_default_str();
  auto untrapped = std::make_shared<bool>(false);
  auto policy_file = std::make_shared<std::string>();
  prep->add_flag(
      "--kernel-allow", *untrapped,
      "Let the ioctl requests the policy allows whatever their parameters run untrapped, in the\n"
      "kernel, as `gdrproxy run` does (most UVM calls, RM_FREE, ...; only on device classes\n"
      "whose every node is granted). Needs a deny-by-default base profile. The agent checks\n"
      "them against the container's rule at start: its policy must allow each of them unread and\n"
      "it must not trace the container, or the container is killed with one line saying why");
  auto lsm_judged = std::make_shared<bool>(false);
  prep->add_flag(
      "--lsm-judged", *lsm_judged,
      "With --kernel-allow: the container's agent judges it in the kernel with its\n"
      "pinned BPF LSM judge (agent --lsm on --lsm-pin DIR), so the requests run\n"
      "untrapped on device classes where some node is granted, not only every one (a\n"
      "container granted some GPUs traps as few calls as `gdrproxy run --lsm`). An agent\n"
      "that cannot judge the container kills it with one line saying why");
  auto lsm_hook = std::make_shared<bool>(false);
  auto agent_ctl = std::make_shared<std::string>(kAgentCtlSocket);
  prep->add_flag(
      "--lsm-hook", *lsm_hook,
      "Add a createRuntime hook (`gdrproxy hook judge`) that has the agent's BPF LSM judge\n"
      "(agent --lsm) judge the container from its creation: every ioctl on a guarded device\n"
      "refused in the kernel until the agent has read the runtime's handover, instead of none\n"
      "judged until then (an fd the container did not open could be used meanwhile by calls\n"
      "its filter never traps). Implied by --lsm-judged");
  prep->add_option("--agent-ctl", *agent_ctl, "The agent's control socket, for --lsm-hook")
      ->capture_default_str();
  prep->add_option("--policy", *policy_file,
                   "The policy --kernel-allow computes with (the agent rule's \"policy\"; default: "
                   "the built-in one)");
  auto abi_as = std::make_shared<std::string>();
  prep->add_option(
          "--nvidia-abi-as", *abi_as,
          "The release whose tables --kernel-allow judges the node's NVIDIA driver with\n"
          "(the agent's \"nvidia_abi_as\"); needed only for a branch the tables do not hold")
      ->type_name("RELEASE");
  auto sys = std::make_shared<ContainerSysfsOptions>();
  auto no_sysfs = std::make_shared<bool>(false);
  prep->add_flag("--no-sysfs", *no_sysfs,
                 "Leave the bundle's /sys alone (default: a synthetic /sys of exactly the granted "
                 "GPUs and NICs, built beside config.json as gdrproxy-sys and mounted read-only "
                 "by the runtime, with live bind mounts of the RDMA ports and CPU topology)");
  prep->add_option("--sysfs-root", sys->sysfs_root,
                   "The host's sysfs the tree is built from (test rigs: a constructed one, in a "
                   "directory named sys)")
      ->capture_default_str();
  prep->add_option("--proc-root", sys->proc_root,
                   "Where /proc is (the NVIDIA driver's GPU list: a GPU minor's PCI function)")
      ->capture_default_str();
  prep->callback([bundle, grant, pa, pmeta, dev_root, rails, rail_profile, plain, sys, no_sysfs,
                  untrapped, policy_file, lsm_judged, lsm_hook, agent_ctl, abi_as, &exit_code] {
    exit_code = run_guarded("gdrproxy oci prepare", 1, [&] {
      if (*lsm_judged && !*untrapped) throw Error("--lsm-judged goes with --kernel-allow");
      PrepareOptions o;
      if (*no_sysfs)
        o.sysfs.reset();
      else
        o.sysfs = *sys;
      o.grants = *grant;
      o.dev_root = *dev_root;
      o.rails = *rails;
      o.rail_profile = *rail_profile;
      o.allow_plain_rails = *plain;
      if (*lsm_hook || *lsm_judged) o.judge_hook_ctl = *agent_ctl;
      if (!pa->base.empty()) o.base = pa->base;
      o.profile.listener_path = pa->listener;
      if (pmeta->count()) o.profile.metadata = pa->metadata;
      o.profile.caps = docker_default_caps();
      o.profile.wait_killable_recv = runtime_supports_wait_killable_recv(pa->runtime);
      if (*untrapped) {
        const Policy policy =
            policy_file->empty() ? Policy::builtin_default() : Policy::load_file(*policy_file);
        std::string note;
        o.profile.filter.kernel_allowed_ioctls = host_container_untrapped_ioctls(
            policy, *grant, *dev_root, note, *lsm_judged,
            abi_as->empty() ? std::nullopt : std::optional<std::string>(*abi_as));
        if (!note.empty()) std::cerr << "gdrproxy oci prepare: " << printable(note) << "\n";
      }
      std::cout << "gdrproxy oci prepare: " << prepare_bundle(*bundle, o) << "\n";
      return 0;
    });
  });
  sec->callback([a, meta, &exit_code] {
    a->metadata_set = meta->count() > 0;
    exit_code = run_guarded("gdrproxy oci seccomp", 1, [&] { return print_profile(*a); });
  });
}

void add_runtime_command(CLI::App& app, int& exit_code,
                         const std::optional<std::vector<std::string>>& runtime_args) {
  auto* rt = app.add_subcommand(
      "runtime",
      "The OCI runtime for container engines (podman --runtime, containerd's BinaryName), also\n"
      "installed as a link named gdrproxy-runtime: on create and run it prepares the bundle as\n"
      "`gdrproxy oci prepare` does, for the devices the container asks for in linux.devices\n"
      "(--device, CDI), each of which must be within the \"grants\" of /etc/gdrproxy/runtime.json\n"
      "(else the container is not started); then it execs the real runtime with the same\n"
      "arguments. A privileged container (an allow-all device rule, CAP_SYS_ADMIN, SYS_MODULE\n"
      "or SYS_RAWIO, no user namespace) that asks for such a device is refused with the reason\n"
      "unless runtime.json has \"accept_unconfined\": true. Other verbs pass through untouched.\n"
      "Annotations are never read. A link named gdrproxy-runtime-NAME (a second runtime\n"
      "handler) reads runtime-NAME.json beside the file the plain link reads.\n"
      "Example: gdrproxy runtime --runtime runc -- list");
  auto o = std::make_shared<ShimOptions>();
  auto runtime = std::make_shared<std::string>();
  auto grants = std::make_shared<std::vector<std::string>>();
  rt->add_option("--runtime", *runtime,
                 "runc, crun or a path (default: the config's \"runtime\", else runc)");
  rt->add_option("--config", o->config_path, "Operator config: runtime, listener, grants, base")
      ->capture_default_str();
  auto* g = rt->add_option("--grant", *grants, "Grant these devices instead of linux.devices")
                ->delimiter(',');
  rt->callback([o, runtime, grants, g, &runtime_args, &exit_code] {
    if (!runtime_args || runtime_args->empty())
      throw CLI::ValidationError("runtime", "give the runtime's arguments after --");
    if (!runtime->empty()) o->runtime = *runtime;
    if (g->count()) o->grants = *grants;
    exit_code = run_runtime_shim(*o, *runtime_args);
  });
}

void add_cdi_command(CLI::App& app, int& exit_code) {
  auto* cdi = app.add_subcommand("cdi", "Container Device Interface specs for container engines");
  cdi->require_subcommand(1);
  auto* gen = cdi->add_subcommand(
      "generate",
      "Print (or write) a CDI spec of kind gdrproxy.dev/device: gpu<N> and the UUID of each\n"
      "NVIDIA GPU (its nodes, and the loaded driver's libraries and tools bound read-only, so\n"
      "that an image without them runs CUDA), each RDMA device by name (its uverbs node and "
      "rdma_cm, and for a RoCE port\n"
      "the hooks that move its netdev into the container with the ARP profile and give it\n"
      "back), and all. Use as podman --device gdrproxy.dev/device=mlx5_0, with gdrproxy runtime\n"
      "(CDI cannot set the seccomp listener).\n"
      "Example: gdrproxy cdi generate --output /etc/cdi/gdrproxy.json");
  auto o = std::make_shared<CdiOptions>();
  auto output = std::make_shared<std::string>();
  gen->add_option("--output", *output, "Write here (atomically) instead of stdout");
  gen->add_option("--sysfs-root", o->sysfs_root, "Where sysfs is")->capture_default_str();
  gen->add_option("--proc-root", o->proc_root, "Where /proc is (the NVIDIA driver's GPU list)")
      ->capture_default_str();
  gen->add_option("--cdi-version", o->cdi_version, "cdiVersion (0.5.0 for podman 4.x)")
      ->capture_default_str();
  gen->add_flag("--allow-plain-rails", o->allow_plain_rails,
                "The hooks move a NIC's netdev even where it backs no RDMA device (test rigs of "
                "constructed sysfs and veth rails)");
  gen->add_option("--rail-profile", o->rail_profile, "netns profile of the NICs' rails")
      ->capture_default_str();
  gen->add_option("--driver-root", o->driver_root,
                  "Where the host's filesystem is, for the NVIDIA driver's libraries and tools "
                  "each GPU carries (those named for the loaded module's version)")
      ->capture_default_str();
  gen->add_flag("!--no-driver-files", o->driver_files,
                "GPUs carry device nodes only (the image brings the driver's libraries, or "
                "another CDI spec does)");
  gen->callback([o, output, &exit_code] {
    exit_code = run_guarded("gdrproxy cdi generate", 1, [&] {
      const std::string text = generate_cdi_spec(*o).dump(2) + "\n";
      if (output->empty()) {
        std::cout << text;
      } else {
        const std::string tmp = *output + ".tmp";
        std::ofstream(tmp) << text;
        if (std::rename(tmp.c_str(), output->c_str()) != 0) throw Error("cannot write " + *output);
        std::cerr << "gdrproxy cdi generate: wrote " << *output << "\n";
      }
      return 0;
    });
  });
}

}  // namespace gdrproxy::proxy
