// The `gdrproxy harness` subcommands: option parsing, the teaching help and the one error
// boundary of the harness's verbs (verbs.h); the work is in lifecycle.cc and the verbs' files.
#include "harness/cli.h"

#include <iostream>
#include <memory>
#include <string>

#include "base/command_failure.h"
#include "base/escape.h"
#include "harness/output.h"
#include "harness/run_dir.h"
#include "harness/verbs.h"

namespace gdrproxy::harness {
namespace {

constexpr const char* kMainHelp =
    R"(Prepare, attach, inspect and tear down one node of a multi-node NCCL/UCX/NIXL job whose
RoCE rails are moved into a container's network namespace. Rails are chosen by `gdrproxy netns
select`, moved by `gdrproxy netns move` (journal first, multirail ARP profile) and given back by
`gdrproxy netns restore`, all in this process; harness/gdr-harness runs the same verbs with the
same variables and lines. Every verb but status needs root.

Typical two-node session (as root on each node; `gdr-harness` = `gdrproxy harness`):
  nodeA# RDMA_IFACES=ens1f0,ens2f0,ens3f0 gdr-harness prepare
         ...  RDMA_PEER_IFACES=ens1f0,ens2f0,ens3f0
  nodeB# RDMA_IFACES=ens1f0,ens2f0,ens3f0 RDMA_PEER_IFACES=ens1f0,ens2f0,ens3f0 gdr-harness prepare
         ...  RDMA_PEER_IFACES=ens1f0,ens2f0          (nodeB lacks ens3f0)
  nodeA# RDMA_IFACES=ens1f0,ens2f0,ens3f0 RDMA_PEER_IFACES=ens1f0,ens2f0 gdr-harness prepare
  both#  gdr-harness run -- all_reduce_perf -b 8 -e 1G -f 2
  both#  gdr-harness teardown

Environment (each verb's --help says which it reads):
  RDMA_IFACES                  comma list of rails to use; wins over RDMA_EXCLUDE_REGEX
  RDMA_EXCLUDE_REGEX           drop matching netdev names (default ^eth[0-9]+$; empty disables)
  RDMA_AUTO_SKIP_NO_IPV4=1     skip rails without an IPv4 address (default: such a rail is an error)
  RDMA_PEER_IFACES             the other node's rails (its prepare prints the line): keep the
                               intersection, so both nodes end with the same set
  ALLOW_BOOTSTRAP_RDMA_IFACE=1 allow a rail that carries the default route / bootstrap address
  RDMA_PLAIN_RAILS=1           stand-in rigs without RDMA devices: every netdev of this namespace
                               (but lo) is a candidate rail, with `ibdev: none`
  GDR_HARNESS_STATE            state directory (default /run/gdr-harness/<node>)
  GDR_HARNESS_NODE             node name (default: SLURMD_NODENAME, else the host name)
  GDR_HARNESS_BOOTSTRAP_IFACE  bootstrap interface (default: the IPv4 default route's interface)
  GDR_HARNESS_BOOTSTRAP_ADDR   CIDR for the container's own bootstrap link (a macvlan)
  GDR_HARNESS_ARP_PROFILE      ARP profile for the moved rails (default multirail, configs/netns/)
  INCLUDE_NCCL_TOPO=1          pass the caller's NCCL_TOPO_FILE into CMD (only if the file exists)
  DEBUG_ALL=1                  NCCL debug logging into files (slower; see `run --help`)
  GDR_HARNESS_LOG_DIR          where DEBUG_ALL writes NCCL's files (default /tmp)
  GDR_HARNESS_RUNTIME          run CMD in a podman, runc or crun container through the runtime
                               shim (gdrproxy runtime) under gdrproxy agent; auto: podman where
                               installed, else runc, else crun; unset: the harness's namespaces
  GDR_HARNESS_CONTAINER        node (one container per node, the default) or rank (one per rank)
  GDR_HARNESS_ROOTFS, GDR_HARNESS_IMAGE, GDR_HARNESS_USER, GDR_HARNESS_PODMAN_RUNTIME,
  GDR_HARNESS_AGENT_SOCKET     the container's (see `run --help`)
  GDRPROXY                     the gdrproxy named to others (default: this binary)
  Launcher identity (shown in status and the plan): SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID,
  SLURMD_NODENAME; OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_NODE_RANK;
  PMIX_RANK. Without them the host name names the node.

Exit status: 0 success, 1 failure, 2 usage error, 3 prepare selected no rail; 125 run or attach
could not set the rails up; run: CMD's own (128+N if a signal N killed it).
Example: gdrproxy harness status)";

constexpr const char* kPrepareHelp = R"(Choose this node's rails and write the node's plan.

Rules (those of `gdrproxy netns select`, applied in this order; each dropped rail gets a line):
  1. candidates are netdevs backed by an RDMA device; a name in RDMA_IFACES that no RDMA device
     backs is accepted as a plain rail (`ibdev: none`), as is every netdev with RDMA_PLAIN_RAILS=1
  2. RDMA_EXCLUDE_REGEX (default ^eth[0-9]+$, empty disables) drops names not in RDMA_IFACES
  3. a non-empty RDMA_IFACES keeps only its names
  4. a netdev absent from this network namespace is skipped
  5. a rail without IPv4 is an error, or skipped with RDMA_AUTO_SKIP_NO_IPV4=1
  6. with RDMA_PEER_IFACES only names the peer also has stay
  7. the default-route / bootstrap interface is skipped (an error if RDMA_IFACES names it)
     unless ALLOW_BOOTSTRAP_RDMA_IFACE=1
Writes $GDR_HARNESS_STATE/plan.json (default /run/gdr-harness/<node>/plan.json) and, where a
rail has an RDMA device, the synthetic sysfs under .../sysfs (snapshot, tree with live ports,
mount plan); not where one is soft-RoCE (rxe: no PCI function to model, a line says so), whose
containers get a fresh sysfs. Ends with a summary (netdevs, ibdevs, GID index per HCA,
NCCL_IB_HCA) and the line RDMA_PEER_IFACES=... to give the other node's prepare, then runs
`gdrproxy doctor --json` with the plan's NCCL environment and keeps its report as
<state>/doctor.json (one verdict line here; `gdrproxy doctor` prints each finding and its fix).
Running prepare again replaces the plan (refused while a run holds the rails). With several
tasks per node only local rank 0 prepares.

Example: gdrproxy harness prepare
More:
  RDMA_IFACES=ens1f0,ens2f0 gdrproxy harness prepare
  RDMA_EXCLUDE_REGEX='^(eth|docker)[0-9]+$' RDMA_AUTO_SKIP_NO_IPV4=1 gdrproxy harness prepare
  RDMA_PEER_IFACES=ens1f0,ens2f0 gdrproxy harness prepare   # the line the other node printed
  srun --ntasks-per-node=1 gdrproxy harness prepare         # every node of a Slurm allocation

Reads: RDMA_IFACES RDMA_EXCLUDE_REGEX RDMA_AUTO_SKIP_NO_IPV4 RDMA_PEER_IFACES
ALLOW_BOOTSTRAP_RDMA_IFACE RDMA_PLAIN_RAILS GDR_HARNESS_STATE GDR_HARNESS_NODE
GDR_HARNESS_BOOTSTRAP_IFACE GDR_HARNESS_ARP_PROFILE GDRPROXY and the launcher's rank variables.
Exit status: 0 plan written, 1 failure, 2 usage error, 3 no rail selected.)";

constexpr const char* kStatusHelp = R"(What is prepared and running on this node.

Prints the node's identity (node name, launcher, ranks), the state directory, the plan's rails
(netdev, ibdev, GID index, IPv4), whether a holder of the rails is alive (by pid and start time:
a reused pid or a zombie is not), the rails a journal says are moved, and where each of them is
now. Exit status 0 (also when nothing is prepared). Needs no root.

Example: gdrproxy harness status
Reads: GDR_HARNESS_STATE GDR_HARNESS_NODE and the launcher's rank variables.)";

constexpr const char* kTeardownHelp =
    R"(Put this node back exactly as it was and remove the state directory.

Stops a run still alive (SIGTERM, then SIGKILL after 10 s), deletes the containers and stops the
agent a killed run left, stops processes left in the rail namespace, gives back the rails of a
journal left by a killed run (`gdrproxy netns restore`), unpins the container's network
namespace and removes the state directory. Running it again finds nothing to do. If a rail
cannot be given back the state directory is kept (with the journal) and the exit status is 1.

Example: gdrproxy harness teardown
Reads: GDR_HARNESS_STATE GDR_HARNESS_NODE.)";

constexpr const char* kAttachHelp =
    R"(Hold this node's rails for processes another program starts, and say where.

attach sets up what `run` sets up for a container (the pinned network namespace holding the
plan's rails, moved with the ARP profile; the bootstrap link with GDR_HARNESS_BOOTSTRAP_ADDR), or
joins it when other attached keys or per-rank runs hold it, and registers KEY as held by process
PID; with --prepare a node without a plan is prepared first (once, under a lock; its output
goes to stderr). It prints, on stdout, lines the caller acts on:
  netns=PATH            the network namespace the processes enter (setns)
  sysfs_plan=PATH       the plan's synthetic sysfs (its mount plan), for the processes' /sys
                        (`gdrproxy sysfs mount --plan PATH --at /sys`); absent without one
  uverbs=NODE           a uverbs node of the plan's RDMA devices, read after the move (one a line)
  gdrproxy=PATH         the gdrproxy to run for them (absolute)
  env=NAME=VALUE        NCCL_IB_HCA, NCCL_SOCKET_IFNAME and GDR_HARNESS_NODE for them
detach drops KEY; the last key to leave gives the rails back. If PID dies without a detach,
the next attach reclaims: when every owner recorded on the node (keys, ranks, a run) is dead,
checked by pid and start time so a reused pid does not count, and a zombie (killed, not yet
reaped) is dead, it gives their rails back and removes their containers first, saying so in one
line on stderr, then attaches as on a clean node; while a live owner remains it joins as usual.
`teardown` also gives them back. KEY: letters, digits, '.', '_' and '-' (the Slurm plugin uses
step-<job>.<step>).

Example: gdrproxy harness attach --prepare --key step-42.0 --owner $$)";

constexpr const char* kDetachHelp =
    R"(Drop KEY's hold on this node's rails; the last holder to leave gives them back.

Deletes KEY's container if it has one, removes its owner file and, when no other holder is
alive, stops the node's agent, deletes the bootstrap link, gives the rails back (`gdrproxy netns
restore`) and removes <state>/run. A KEY that holds nothing is a line and status 0. If a rail
cannot be given back the journal is kept (status 1; `teardown` tries again).

Example: gdrproxy harness detach --key step-42.0)";

constexpr const char* kRunHelp =
    R"(Run CMD in a fresh container of this node holding the planned rails.

Usage: gdrproxy harness run [--] CMD [ARGS...]   (or harness/gdr-harness run ...)

What happens:
  - a new network namespace is made (pinned at <state>/run/netns) and the plan's rails are moved
    into it by `gdrproxy netns move` with the ARP profile (default multirail: arp_announce 2,
    arp_ignore 1, arp_filter 1, rp_filter 1, a routing table and a `from <addr>` rule per rail);
    a rail's soft-RoCE (rxe) device, which the kernel drops when its netdev changes namespace, is
    made again with the same name in the container's namespace by the move, and on the node by
    the restore (a line each); the uverbs nodes granted are read after the move;
  - with GDR_HARNESS_BOOTSTRAP_ADDR=CIDR the container also gets a bootstrap link: a macvlan of
    the bootstrap interface, named like it, with that address (without it the container has only
    the rails and lo, and NCCL's socket bootstrap has no interface inside);
  - CMD runs in that network namespace and a new mount namespace with a /sys of its own (the
    plan's synthetic sysfs where the node has PCI RDMA devices, its live ports bound from the
    node's /sys as the Slurm plugin's tasks get it; else a sysfs of the rail namespace); under `gdrproxy run
    --grant uverbsN,...,rdma_cm` when a rail has an RDMA device, else directly (said on start);
  - on exit, and on SIGINT/SIGTERM/SIGHUP (forwarded to CMD first), the rails are given back by
    `gdrproxy netns restore`. If the harness itself is killed, `gdr-harness teardown` does it.

One container per node (the default) or per rank (GDR_HARNESS_CONTAINER=rank, in every rank's
run; the rank from SLURM_PROCID, OMPI_COMM_WORLD_RANK or PMIX_RANK): the first rank of a node to
arrive moves the rails and makes the bootstrap link, the others join that network namespace, each
in a container of its own, and the last to leave gives the rails back.

In a runc or crun container (GDR_HARNESS_RUNTIME=runc|crun) instead of the namespaces above:
  - the container joins the network namespace holding the rails; its bundle is in
    <state>/run/ctr-node/bundle (ctr-rank-N per rank) and it is started through the runtime
    shim, `gdrproxy runtime --config <state>/run/ctr-node/runtime.json --grant ... -- runc run
    ...`: the shim gives the bundle its devices (the seccomp profile with the agent's listener,
    /dev nodes of the granted uverbs and rdma_cm only, device cgroup rules, the synthetic /sys,
    none for a soft-RoCE plan; its line "gdrproxy runtime: ..." says what it did) and then execs
    the real runtime, named in that config; the harness itself never edits a bundle for devices;
  - a `gdrproxy agent` started by the node's first run (stopped after its last) grants exactly
    those devices to the node's containers (gdrh-<node>, or gdrh-<node>-r<rank> per rank), or
    GDR_HARNESS_AGENT_SOCKET names an operator's agent, whose config then decides; with
    DEBUG_ALL=1 the agent traces the device calls into $GDR_HARNESS_LOG_DIR/gdrproxy-trace.<node>/;
  - the root file system is GDR_HARNESS_ROOTFS (an image's unpacked rootfs, read-only), or the
    host's /usr, /etc and /opt read-only; the working directory is bound read-write and is CMD's;
    CMD runs as GDR_HARNESS_USER (uid:gid, default 0:0) with a default container's capabilities
    and the harness's own hard memlock limit as both limits.

In a podman container (GDR_HARNESS_RUNTIME=podman) the same container, made by podman:
  - `podman run --rm --name gdrh-<node> --network ns:<state>/run/netns --runtime <the shim>`:
    the network namespace is the node's rail namespace (as above), the shim is a link named
    gdrproxy-runtime in <state>/run/ctr-node/ with its config as `--runtime-flag
    gdrproxy-config=...` (podman gives its runtime no environment), and the shim runs
    GDR_HARNESS_PODMAN_RUNTIME (runc where installed, else crun) after preparing podman's bundle;
  - the granted devices go in as --device /dev/infiniband/..., from which the shim derives the
    grant set; the agent knows the container by the metadata line gdr-harness-container=<id>;
  - the image is GDR_HARNESS_IMAGE (podman's own reference; never pulled: `podman pull` it
    first), or GDR_HARNESS_ROOTFS (--rootfs), or the host's /usr, /etc, /opt read-only; the root
    is read-only, the environment, user, capabilities and working directory are runc's; the
    harness's own nofile/memlock limits (nproc at most kernel.pid_max), no pids limit;
  - the container is removed when CMD exits, and by `teardown` after a killed run.
GDR_HARNESS_RUNTIME=auto picks podman where installed, else runc, else crun (said on start);
unset, CMD runs in the harness's own namespaces under `gdrproxy run` (the default).

CMD's environment is clean except for: PATH HOME USER LOGNAME TERM LANG LC_* TZ, every NCCL_*,
UCX_*, NIXL_* of the caller, the launcher's SLURM_* OMPI_* PMIX_* PMI_*, and:
  NCCL_IB_HCA         "=" + the plan's ibdev:port list (exact names); not set when no rail has an
                      RDMA device (a line says so)
  NCCL_SOCKET_IFNAME  the bootstrap interface (never a moved rail)
  NCCL_TOPO_FILE      only with INCLUDE_NCCL_TOPO=1 and an existing file; dropped otherwise
  DEBUG_ALL=1         NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH,
                      NCCL_DEBUG_FILE=$GDR_HARNESS_LOG_DIR/nccl-debug.<node>.%h.%p.log,
                      NCCL_TOPO_DUMP_FILE=$GDR_HARNESS_LOG_DIR/nccl-topo.<node>.xml;
                      each of them the caller's own value if set. Debug output costs speed.
  GDR_HARNESS_NODE    this node's name
The two harness values replace a caller's NCCL_IB_HCA / NCCL_SOCKET_IFNAME (a line says so).

Example: gdrproxy harness run -- ip -br link
More:
  gdr-harness run -- all_reduce_perf -b 8 -e 1G -f 2 -g 1
  DEBUG_ALL=1 NCCL_DEBUG=WARN gdr-harness run -- ./train.sh        # caller's NCCL_DEBUG wins
  INCLUDE_NCCL_TOPO=1 NCCL_TOPO_FILE=/etc/nccl/topo.xml gdr-harness run -- nixlbench ...
  GDR_HARNESS_BOOTSTRAP_ADDR=192.0.2.110/24 gdr-harness run -- ping -I eth0 -c1 192.0.2.20
  GDR_HARNESS_RUNTIME=runc GDR_HARNESS_ROOTFS=/srv/images/nccl-tests gdr-harness run -- all_reduce_perf -g 1
  GDR_HARNESS_RUNTIME=podman GDR_HARNESS_IMAGE=localhost/nccl-tests gdr-harness run -- all_reduce_perf -g 1

Under an MPI launcher (PMIX_SERVER_URI* set: mpirun's orted, srun) the launcher's 127.0.0.1
listeners (its PMIx server) are relayed into the container's network namespace by
gdr-loopback-relay (GDR_LOOPBACK_RELAY, else next to gdrproxy's build or on PATH).

Reads: DEBUG_ALL INCLUDE_NCCL_TOPO NCCL_* UCX_* NIXL_* GDR_HARNESS_STATE GDR_HARNESS_NODE
GDR_HARNESS_BOOTSTRAP_ADDR GDR_HARNESS_ARP_PROFILE GDR_HARNESS_LOG_DIR GDR_HARNESS_RUNTIME
GDR_HARNESS_ROOTFS GDR_HARNESS_IMAGE GDR_HARNESS_PODMAN_RUNTIME GDR_HARNESS_AGENT_SOCKET
GDR_HARNESS_USER GDR_HARNESS_CONTAINER GDRPROXY.
Exit status: CMD's own (128+N if killed by signal N); 125 if the container cannot be set up;
1 if CMD succeeded but the rails could not all be given back.)";

// The one error boundary: a verb's failure is one line and its status.
template <typename Fn>
void guarded(int& exit_code, Fn fn) {
  try {
    exit_code = fn();
  } catch (const UsageError& e) {
    std::cerr << kProg << ": " << gdrproxy::printable(e.what()) << " (see " << kProg << " "
              << e.verb() << " --help)\n";
    exit_code = 2;
  } catch (const Failure& f) {
    exit_code = report_failure(std::string(kProg) + ": error", f, f.status());
  } catch (const std::exception& e) {
    exit_code = report_failure(std::string(kProg) + ": error", e, 1);
  }
}

// "node" is a run's own key (one container per node), never an attached holder's.
void check_key(const std::string& key, const std::string& verb) {
  if (!valid_key(key) || key == "node")
    throw UsageError("--key '" + key + "': letters, digits, '.', '_', '-' (and not 'node')", verb);
}

// A verb: its help's first line as the description the parent lists, the rest as its footer.
CLI::App* add_verb(CLI::App& parent, const std::string& name, const std::string& help) {
  const size_t end = help.find('\n');
  auto* verb = parent.add_subcommand(name, help.substr(0, end));
  if (end != std::string::npos) verb->footer(help.substr(end + 1));
  return verb;
}

}  // namespace

void register_commands(CLI::App& app, int& exit_code,
                       const std::optional<std::vector<std::string>>& run_tail) {
  auto* h = app.add_subcommand(
      "harness", "Multi-node jobs: a node's RoCE rails for its ranks (prepare, run, attach, ...)");
  h->footer(kMainHelp);
  h->require_subcommand(1);

  auto* prep = add_verb(*h, "prepare", kPrepareHelp);
  prep->callback([&exit_code] {
    guarded(exit_code, [] {
      const Context c = make_context(process_environment());
      return prepare(c, std::cout);
    });
  });

  auto* stat = add_verb(*h, "status", kStatusHelp);
  stat->callback([&exit_code] {
    guarded(exit_code, [] {
      const Identity id = identify(process_environment(), this_host());
      Context c;
      c.id = id;
      return status(c, std::cout);
    });
  });

  auto* tear = add_verb(*h, "teardown", kTeardownHelp);
  tear->callback([&exit_code] {
    guarded(exit_code, [] { return teardown(make_context(process_environment())); });
  });

  auto args = std::make_shared<AttachArgs>();
  auto owner = std::make_shared<std::string>();
  auto* att = add_verb(*h, "attach", kAttachHelp);
  att->add_option("--key", args->key, "The holder's name (step-<job>.<step>)")->required();
  att->add_option("--owner", *owner, "The pid of the process that holds the key")->required();
  att->add_flag("--prepare", args->prepare, "Prepare a node that has no plan first");
  att->callback([&exit_code, args, owner] {
    guarded(exit_code, [&] {
      check_key(args->key, "attach");
      if (owner->empty() || owner->find_first_not_of("0123456789") != std::string::npos ||
          (*owner)[0] == '0' || owner->size() > 9)
        throw UsageError("--owner needs the pid of the process that holds the key", "attach");
      args->owner = static_cast<pid_t>(std::stol(*owner));
      return attach(make_context(process_environment()), *args, std::cout);
    });
  });

  auto key = std::make_shared<std::string>();
  auto* det = add_verb(*h, "detach", kDetachHelp);
  det->add_option("--key", *key, "The holder's name")->required();
  det->callback([&exit_code, key] {
    guarded(exit_code, [&] {
      check_key(*key, "detach");
      return detach(make_context(process_environment()), *key);
    });
  });

  auto* run_cmd = add_verb(*h, "run", kRunHelp);
  run_cmd->callback([&exit_code, &run_tail] {
    guarded(exit_code, [&] {
      const std::vector<std::string> cmd = run_tail.value_or(std::vector<std::string>{});
      if (cmd.empty())
        throw UsageError("run needs a command (gdr-harness run -- CMD ARGS...)", "run");
      return run(make_context(process_environment()), cmd);
    });
  });
}

}  // namespace gdrproxy::harness
